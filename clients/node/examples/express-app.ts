// A shop page guarded by Vigil: the middleware gives each visitor a session and a token for the
// browser agent, the checkout reports the backend's own view of the visit and reads the verdict.
//
//   VIGIL_API_KEY=vgl_... VIGIL_PROJECT=prj_demo npx tsx examples/express-app.ts
// (or Node 22.6+: node --experimental-strip-types examples/express-app.ts)
import express, { type NextFunction, type Request, type Response } from "express";
import { Vigil, type VigilPageLocals } from "vigil-client";

const vigil = new Vigil({ apiKey: process.env.VIGIL_API_KEY }); // baseUrl: VIGIL_BASE_URL or :3000
const project = process.env.VIGIL_PROJECT ?? "prj_demo";
// Pages fail open (the default): with Vigil down or slow (2 s at most), the shop still sells.
const withSession = vigil.express({ project });
// The checkout answers with a handler of its own when the keys cannot be read (onError: "closed"
// would answer 503 {"message"} too; this one also logs why).
const checkoutSession = vigil.express({
  project,
  onError: (err: Error, _req: Request, res: Response, _next: NextFunction) => {
    console.error("vigil unavailable:", err.message);
    res.status(503).json({ message: "Checkout is unavailable for a moment; please try again." });
  },
});
const app = express();

// JSON for an inline <script>: `<` escaped so that a value can never close the tag.
const inline = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c");

app.get("/", withSession, (_req, res) => {
  const session = res.locals.vigil as VigilPageLocals;
  // Without the keys (Vigil unavailable) the page is served without the agent.
  const agent = session.available
    ? `<script src="${vigil.baseUrl}/v1/agent.js"></script>
<script>Vigil.collect(${inline({ publicKey: session.publicKey, sessionId: session.sessionId, sessionToken: session.sessionToken })});</script>`
    : "";
  res.type("html").send(`<!doctype html>
${agent}
<form method="post" action="/checkout"><button data-vigil-action="checkout">Buy</button></form>`);
});

app.post("/checkout", checkoutSession, async (req, res) => {
  const { sessionId } = res.locals.vigil as VigilPageLocals;
  // What the backend itself saw; the agent's visit from the page is already in the session.
  // Bounded like the verdict below: a slow Vigil costs the checkout 1.5 s at most.
  await vigil
    .createEvent(
      project,
      sessionId,
      { ipAddress: req.ip ?? req.socket.remoteAddress ?? "0.0.0.0", userAgent: req.get("user-agent") ?? null },
      { signal: AbortSignal.timeout(1500) },
    )
    .catch((err: unknown) => console.error("vigil event not recorded:", err));
  // Never let a slow answer block the checkout: no verdict within 1.5 s counts as a person.
  const verdict = await vigil.verdict(project, sessionId, { timeoutMs: 1500, fallback: null });
  if (verdict !== null && verdict.scoreBot >= 0.9) {
    res.status(403).send("Automated checkouts are not allowed.");
    return;
  }
  res.send(verdict !== null && verdict.scoreProxyVpn >= 0.9 ? "Order placed (flagged for review)." : "Order placed.");
});

app.listen(Number(process.env.PORT ?? 3001), () => console.log("shop on http://localhost:3001/"));
