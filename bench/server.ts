// The local server for the HTTP benchmark, in its own process so the load
// generator does not share its core.
import { fileURLToPath } from 'node:url';
import { startDevServer } from '../scripts/dev-server.js';

const server = await startDevServer({ root: fileURLToPath(new URL('./app', import.meta.url)), port: 0 });
process.stdout.write(`${server.url}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
