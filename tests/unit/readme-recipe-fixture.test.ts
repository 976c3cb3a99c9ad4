// The packed-tarball suite runs the package README's Next.js recipe: its
// file-named snippets ("Try it offline" and the prepaid-session route) are
// written, as a user pastes them, into a fresh copy of tests/fixtures/packed-next
// when it is installed from the tarball (tests/support/packed.ts readmeRecipe),
// then built and served (tests/package/packed.test.ts). This checks, fast, that
// the recipe has the files that suite runs, and that the fixture holds no copy
// of them that could drift from the README.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readmeRecipe } from '../support/packed.js';

const fixture = new URL('../../tests/fixtures/packed-next/', import.meta.url);

describe("the package README's Next.js recipe", () => {
  it('has the files the packed Next.js app is assembled from: one dev node, both dev wallet routes, a paid route and a session route', () => {
    expect([...readmeRecipe().keys()]).toEqual([
      'lib/paywall.ts',
      'app/api/hello/route.ts',
      'app/api/dev/pay/route.ts',
      'app/api/dev/receive/[[...hash]]/route.ts',
      'app/api/generate/route.ts',
    ]);
  });

  it('makes one dev node, in lib/paywall.ts, which every other file of it imports', () => {
    for (const [path, code] of readmeRecipe()) {
      if (path === 'lib/paywall.ts') expect(code).toContain('createDevNode(');
      else {
        expect(code, path).not.toContain('createDevNode');
        if (path !== 'app/api/hello/route.ts') expect(code, path).toMatch(/import \{ devNode \} from '@\/lib\/paywall';/);
      }
    }
  });

  it.each([...readmeRecipe().keys()])('%s is not also a file of the fixture (it is written from the README)', (path) => {
    expect(existsSync(new URL(path, fixture))).toBe(false);
  });
});
