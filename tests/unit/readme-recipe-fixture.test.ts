// The packed-tarball suite proves the package README's offline recipe in a
// real Next.js app (tests/fixtures/packed-next). That proof is worth something
// only while the fixture IS the recipe: each snippet of "Try it offline" that
// names its file must equal that file of the fixture, byte for byte.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { codeBlocks } from '../support/markdown.js';

const root = new URL('../../', import.meta.url);
const guide = readFileSync(new URL('packages/l402-paywall/README.md', root), 'utf8');
const recipe = codeBlocks(guide).filter((block) => block.heading === 'Try it offline' && block.lang === 'ts');

describe("the package README's offline recipe", () => {
  it('has its three files', () => {
    expect(recipe.map((block) => block.code.split('\n')[0])).toEqual(['// lib/paywall.ts', '// app/api/hello/route.ts', '// app/api/dev/pay/route.ts']);
  });

  it.each(recipe.map((block) => [block.code.split('\n')[0]!.slice(3), block.code] as const))('is the Next.js fixture, %s', (path, code) => {
    expect(readFileSync(new URL(`tests/fixtures/packed-next/${path}`, root), 'utf8').trimEnd()).toBe(code.trimEnd());
  });
});
