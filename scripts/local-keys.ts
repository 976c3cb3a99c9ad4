// `npm start`'s keys: a local run without L402_SECRET or DEV_NODE_PRIVATE_KEY
// signs its tokens and invoices with keys of its own. Reading the configuration
// makes them (lib/config.ts, Config.unsavedKeys) and writes nothing; the
// start-up keeps them under DATA_DIR here, so tokens and invoices made before a
// restart still verify after it, and the banner says so.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../lib/config.js';

/** Writes each key `config` made for this run to its file under DATA_DIR (owner-only); the config, with nothing left unsaved. */
export function keepLocalKeys(config: Config): Config {
  for (const { file, key } of config.unsavedKeys) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, key + '\n', { mode: 0o600 });
  }
  return { ...config, unsavedKeys: [] };
}
