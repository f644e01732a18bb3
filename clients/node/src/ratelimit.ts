// The IETF httpapi rate-limit fields (draft-ietf-httpapi-ratelimit-headers) as the API sends them:
//   RateLimit-Policy: "burst";q=10;w=1, "monthly";q=100000;w=2592000
//   RateLimit:        "burst";r=8;t=1, "monthly";r=99998;t=2591997
// Each is a structured-field list of named policies with parameters; both are parsed and joined
// by name, and the policy with the fewest requests left is the one summarised at the top level.

export interface RateLimitPolicy {
  /** The policy's name ("burst", "monthly"). */
  policy: string;
  /** q: requests allowed per window. */
  limit: number | undefined;
  /** w: the window in seconds. */
  window: number | undefined;
  /** r: requests left in the current window. */
  remaining: number | undefined;
  /** t: seconds until the window resets. */
  reset: number | undefined;
}

export interface RateLimit extends RateLimitPolicy {
  /** Every policy of the answer, in the order the API listed them. */
  policies: RateLimitPolicy[];
  /** The header values as received, for anything this parsing does not cover. */
  raw: { policy: string | null; rateLimit: string | null };
}

type Items = Map<string, Record<string, number>>;

function parseList(value: string | null): Items {
  const items: Items = new Map();
  if (!value) return items;
  // Policy names are quoted strings or tokens, parameters are `;key=integer`; commas inside
  // quoted names are not expected from this API, so a plain split is enough.
  for (const member of value.split(",")) {
    const [rawName, ...params] = member.split(";").map((part) => part.trim());
    if (!rawName) continue;
    const name = rawName.replace(/^"(.*)"$/, "$1");
    const values: Record<string, number> = {};
    for (const param of params) {
      const [key, number] = param.split("=");
      if (key && number !== undefined && /^-?\d+$/.test(number.trim())) values[key.trim()] = Number(number);
    }
    items.set(name, values);
  }
  return items;
}

/** The rate-limit state an answer reports, or undefined when it carries neither header. */
export function parseRateLimit(headers: Headers): RateLimit | undefined {
  const policyHeader = headers.get("ratelimit-policy");
  const rateLimitHeader = headers.get("ratelimit");
  if (policyHeader === null && rateLimitHeader === null) return undefined;

  const declared = parseList(policyHeader);
  const current = parseList(rateLimitHeader);
  const names = [...new Set([...declared.keys(), ...current.keys()])];
  const policies = names.map((policy): RateLimitPolicy => {
    const d = declared.get(policy) ?? {};
    const c = current.get(policy) ?? {};
    return { policy, limit: d.q, window: d.w, remaining: c.r, reset: c.t };
  });
  // The binding limit: the one with the fewest requests left (unknown counts as plenty).
  const binding = policies.reduce<RateLimitPolicy | undefined>(
    (best, p) =>
      best === undefined || (p.remaining ?? Infinity) < (best.remaining ?? Infinity) ? p : best,
    undefined,
  ) ?? { policy: "", limit: undefined, window: undefined, remaining: undefined, reset: undefined };
  return { ...binding, policies, raw: { policy: policyHeader, rateLimit: rateLimitHeader } };
}
