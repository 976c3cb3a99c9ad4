// Writes the proxy configuration's JSON Schema into the library's package
// (packages/l402-paywall/proxy-config.schema.json, published as
// l402-paywall/proxy-config.schema.json) from its zod schema. Run after
// changing src/proxy/config.ts: `npx tsx scripts/write-proxy-config-schema.ts`;
// packages/l402-paywall/tests/unit/proxy-config.test.ts fails until the file matches.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { proxyConfigJsonSchema } from 'l402-paywall/proxy';

const file = fileURLToPath(new URL('../packages/l402-paywall/proxy-config.schema.json', import.meta.url));
writeFileSync(file, `${JSON.stringify(proxyConfigJsonSchema(), null, 2)}\n`);
console.log(`wrote ${file}`);
