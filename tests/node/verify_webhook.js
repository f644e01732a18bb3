// Verifies one webhook delivery with the official Standard Webhooks library from npm, given the
// secret string exactly as Vigil's API returned it (`new Webhook(secret)`). Reads
// {"secret", "headers", "body"} as JSON on stdin; prints `verified` or `refused`.
// Used by tests/webhooks.rs.
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const msg = JSON.parse(input);
  try {
    new Webhook(msg.secret).verify(msg.body, msg.headers);
    console.log("verified");
  } catch (e) {
    console.log("refused");
  }
});
