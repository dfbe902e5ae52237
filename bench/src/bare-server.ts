/**
 * The ingest baseline: a bare Express app that only parses the JSON body of PUT /apps/:process_guid and
 * answers 202, with the API's default body limit. Run as its own process, as the API is; logs its port as
 * JSON on stdout.
 */
import { createServer } from 'node:http';
import express from 'express';

const app = express();
app.use(express.json({ limit: 1024 * 1024, type: () => true, strict: false }));
app.put('/apps/:process_guid', (req, res) => {
  const body = req.body as { process_guid?: unknown } | undefined;
  res.status(body?.process_guid === req.params.process_guid ? 202 : 400).end();
});
const server = createServer(app);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ msg: 'bare listening', port })}\n`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
