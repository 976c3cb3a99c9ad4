// No module-level mutable variable in the service's lib/: what a configured
// service keeps (connections, caches, the deployment) belongs to the object
// that owns it (the service context, a deployment, a database), as the
// library's own rule says for its sources
// (packages/l402-paywall/tests/unit/module-state.test.ts).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleVariables, sourceFiles } from '../../packages/l402-paywall/tests/support/module-variables.js';

const LIB = fileURLToPath(new URL('../../lib/', import.meta.url));

describe('module-level state in lib/', () => {
  it('no source file of lib/ declares a module-level let or var', () => {
    const files = sourceFiles(LIB);
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.flatMap((path) =>
      moduleVariables(path, readFileSync(path, 'utf8')).map((found) => `lib/${relative(LIB, path).split('\\').join('/')}:${found.line}: ${found.text}`),
    );
    expect(offenders).toEqual([]);
  });
});
