// Labels and the quality report through the client against a real `vigil serve`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { NotFoundError, ValidationError } from "vigil-client";
import { client, newSessionId, projectId } from "./env.mjs";

const vigil = client();

const BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36";

test("labelSession labels a session (idempotently); labels() pages; quality() counts; unlabelSession withdraws", async () => {
  // Two fresh sessions, each with an event: only a session the project saw can be labelled.
  const person = newSessionId("label-human");
  const robot = newSessionId("label-bot");
  await vigil.createEvent(projectId, person, { ipAddress: "203.0.113.20", userAgent: BROWSER });
  await vigil.createEvent(projectId, robot, { ipAddress: "203.0.113.21", userAgent: "curl/8.5.0" });
  const score = await vigil.sessionScore(projectId, person);

  try {
    const first = await vigil.labelSession(projectId, person, {
      label: "human",
      reason: "support_ticket",
      note: "Kiosk in the store",
    });
    assert.equal(first.sessionId, person);
    assert.equal(first.label, "human");
    assert.equal(first.reason, "support_ticket");
    assert.equal(first.note, "Kiosk in the store");
    assert.ok(!Number.isNaN(Date.parse(first.labelledAt)));
    assert.equal(first.scoreBot, score.scoreBot, "the session's score when it was labelled");
    assert.ok(Array.isArray(first.reasons));
    assert.ok(first.reasons.every((r) => typeof r === "string"));

    // The same label again replaces it: still one label for the session.
    const human = await vigil.labelSession(projectId, person, {
      label: "human",
      reason: "support_ticket",
      note: "Kiosk in the store",
    });
    assert.equal(human.label, "human");
    assert.equal(human.reason, "support_ticket");
    assert.ok(Date.parse(human.labelledAt) >= Date.parse(first.labelledAt));

    // Without a reason or a note, both are null.
    const bot = await vigil.labelSession(projectId, robot, { label: "bot" });
    assert.equal(bot.label, "bot");
    assert.equal(bot.reason, null);
    assert.equal(bot.note, null);
    assert.deepEqual(await vigil.label(projectId, robot), bot);

    // Page size 1: one label a page, every label once, by session id, across the Link pages.
    const pages = await collectPages(vigil.labels(projectId, { limit: 1 }).pages());
    assert.ok(pages.length >= 2, "at least the two labels, one a page");
    assert.ok(pages.every((p) => p.length === 1), "one label a page");
    const listed = pages.flat();
    const ids = listed.map((l) => l.sessionId);
    assert.deepEqual(ids, [...ids].sort(), "by session id");
    assert.equal(new Set(ids).size, ids.length, "no label twice");
    assert.deepEqual(listed.filter((l) => l.sessionId === person), [human], "one label for the relabelled session");
    assert.deepEqual(listed.filter((l) => l.sessionId === robot), [bot]);
    // The iterator walks the same pages.
    assert.deepEqual((await vigil.labels(projectId, { limit: 1 }).toArray()).map((l) => l.sessionId), ids);

    // The quality over exactly these two labels' range ([from, to)).
    const from = human.labelledAt;
    const to = new Date(Date.parse(bot.labelledAt) + 1).toISOString();
    const quality = await vigil.quality(projectId, { from, to });
    assert.equal(quality.labelled, 2);
    assert.equal(quality.bots, 1);
    assert.equal(quality.humans, 1);
    assert.ok(quality.threshold >= 0 && quality.threshold <= 1);
    const personFlagged = human.scoreBot >= quality.threshold;
    const robotFlagged = bot.scoreBot >= quality.threshold;
    assert.equal(quality.falsePositives, personFlagged ? 1 : 0);
    assert.equal(quality.missedBots, robotFlagged ? 0 : 1);
    assert.equal(quality.recall, robotFlagged ? 1 : 0);
    const flagged = Number(personFlagged) + Number(robotFlagged);
    assert.equal(quality.precision, flagged === 0 ? null : Number(robotFlagged) / flagged);
    // Each code once a session: by code (byte order), the first ten.
    const counted = (reasons) =>
      [...reasons].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, 10).map((r) => [r, 1]);
    assert.deepEqual(quality.falsePositiveReasons, personFlagged ? counted(human.reasons) : []);
    assert.deepEqual(quality.missedBotReasons, robotFlagged ? [] : counted(bot.reasons));
    // By default the last 30 days: these two at least.
    const recent = await vigil.quality(projectId);
    assert.ok(recent.labelled >= 2 && recent.bots >= 1 && recent.humans >= 1);
    // A range that ends before it starts is refused.
    await assert.rejects(vigil.quality(projectId, { from: to, to: from }), ValidationError);

    // Withdrawn, the label is gone; withdrawing it again is a NotFoundError.
    assert.equal(await vigil.unlabelSession(projectId, person), undefined);
    assert.ok(!(await vigil.labels(projectId).toArray()).some((l) => l.sessionId === person));
    await assert.rejects(vigil.unlabelSession(projectId, person), (err) => {
      assert.ok(err instanceof NotFoundError);
      assert.equal(err.status, 404);
      assert.match(err.message, /label not found/i);
      return true;
    });
    await assert.rejects(vigil.label(projectId, person), NotFoundError);
  } finally {
    await vigil.unlabelSession(projectId, person).catch(() => {});
    await vigil.unlabelSession(projectId, robot).catch(() => {});
  }
});

test("labelling a session the project has no events of is a NotFoundError", async () => {
  await assert.rejects(vigil.labelSession(projectId, newSessionId("label-none"), { label: "bot" }), (err) => {
    assert.ok(err instanceof NotFoundError);
    assert.equal(err.status, 404);
    assert.match(err.message, /session not found/i);
    return true;
  });
});

test("a bad label is a ValidationError", async () => {
  const sessionId = newSessionId("label-bad");
  await vigil.createEvent(projectId, sessionId, { ipAddress: "203.0.113.22", userAgent: BROWSER });
  await assert.rejects(
    vigil.labelSession(projectId, sessionId, { label: "robot" }),
    (err) => err instanceof ValidationError && err.status === 400,
  );
  await assert.rejects(
    vigil.labelSession(projectId, sessionId, { label: "bot", reason: "Not A Code" }),
    (err) => err instanceof ValidationError && err.status === 400,
  );
  await assert.rejects(
    vigil.labelSession(projectId, sessionId, { label: "human", note: "x".repeat(501) }),
    (err) => err instanceof ValidationError && err.status === 400,
  );
  // Nothing was stored.
  await assert.rejects(vigil.unlabelSession(projectId, sessionId), NotFoundError);
});

async function collectPages(pages) {
  const all = [];
  for await (const page of pages) all.push(page);
  return all;
}
