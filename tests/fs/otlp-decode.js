// otlp-decode.js OTEL.json OUT.json — read otel.json as OpenTelemetry's JavaScript
// implementation does: the OTLP protobuf root of @opentelemetry/otlp-transformer builds an
// ExportTraceServiceRequest from the JSON mapping (OTLP/JSON's hex ids made bytes first, as
// OTLP/JSON specifies), verify() must find nothing wrong, and the message must survive a
// protobuf encode and decode; the decoded request goes to OUT.json for glance.py to check.
const fs = require('fs');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const doc = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const hex = (field, h, bytes) => {
  if (typeof h !== 'string' || !new RegExp(`^[0-9a-f]{${2 * bytes}}$`).test(h))
    throw new Error(`${field} ${JSON.stringify(h)} is not ${bytes} bytes of lowercase hex`);
  return Buffer.from(h, 'hex');
};
for (const rs of doc.resourceSpans)
  for (const ss of rs.scopeSpans)
    for (const s of ss.spans) {
      s.traceId = hex('traceId', s.traceId, 16);
      s.spanId = hex('spanId', s.spanId, 8);
      if (s.parentSpanId !== undefined) s.parentSpanId = hex('parentSpanId', s.parentSpanId, 8);
    }
const msg = Req.fromObject(doc);
const problem = Req.verify(msg);
if (problem) {
  console.error(`ExportTraceServiceRequest.verify: ${problem}`);
  process.exit(1);
}
const back = Req.decode(Req.encode(msg).finish());
const out = Req.toObject(back, {longs: String, enums: Number, bytes: String});
fs.writeFileSync(process.argv[3], JSON.stringify(out));
