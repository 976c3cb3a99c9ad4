// scripts/check-folder-cycles.ts's logic on small graphs: modules collapsed to
// folders, the strongly connected components of more than one folder, and the
// known list's verdict.
import { describe, expect, it } from 'vitest';
import { cycles, folderGraph, folderOf, judge } from '../../scripts/check-folder-cycles.js';

const SRC = 'packages/lib/src';

describe('folderOf', () => {
  it("is a package's first folder under src/, src/ for its entry points, lib/'s first folder, and nothing elsewhere", () => {
    expect(folderOf(`${SRC}/core/pipeline.ts`)).toBe(`${SRC}/core`);
    expect(folderOf(`${SRC}/schemes/l402/token.ts`)).toBe(`${SRC}/schemes`);
    expect(folderOf(`${SRC}/index.ts`)).toBe(SRC);
    expect(folderOf('lib/service/records/price.ts')).toBe('lib/service');
    expect(folderOf('lib/config.ts')).toBe('lib');
    expect(folderOf('node_modules/zod/index.js')).toBeUndefined();
    expect(folderOf('api/health.ts')).toBeUndefined();
    expect(folderOf('packages/lib/tests/a.test.ts')).toBeUndefined();
  });
});

describe('cycles', () => {
  it('finds folders tied through different files, though no two files import each other', () => {
    // a/x -> b/y and b/z -> a/w: no module loop, one folder loop.
    const graph = folderGraph([
      [`${SRC}/a/x.ts`, `${SRC}/b/y.ts`],
      [`${SRC}/b/z.ts`, `${SRC}/a/w.ts`],
      [`${SRC}/a/x.ts`, `${SRC}/a/w.ts`], // inside a folder: not an edge
      [`${SRC}/index.ts`, `${SRC}/a/x.ts`],
      [`${SRC}/b/y.ts`, 'node_modules/zod/index.js'],
    ]);
    expect(cycles(graph)).toEqual([[`${SRC}/a`, `${SRC}/b`]]);
  });

  it('answers each component once, sorted, and none for a graph that only points down', () => {
    const graph = new Map<string, Set<string>>([
      ['e', new Set(['c'])],
      ['c', new Set(['d', 'x'])],
      ['d', new Set(['c', 'e'])], // c -> d -> e -> c, and c <-> d
      ['x', new Set(['y'])],
      ['y', new Set(['x'])],
      ['top', new Set(['c', 'x', 'low'])],
      ['low', new Set()],
    ]);
    expect(cycles(graph)).toEqual([
      ['c', 'd', 'e'],
      ['x', 'y'],
    ]);
    const layered = new Map<string, Set<string>>([
      ['top', new Set(['mid', 'low'])],
      ['mid', new Set(['low'])],
      ['low', new Set()],
    ]);
    expect(cycles(layered)).toEqual([]);
  });

  it('follows a long chain back to its start without growing the call stack', () => {
    const length = 100_000;
    const graph = new Map<string, Set<string>>(Array.from({ length }, (_, i) => [`f${i}`, new Set([`f${(i + 1) % length}`])]));
    const [component, ...rest] = cycles(graph);
    expect(rest).toEqual([]);
    expect(component).toHaveLength(length);
  });
});

describe('judge', () => {
  it('fails a component with any unknown folder, prints one of known folders alone, and fails a known folder in no component', () => {
    const verdict = judge(
      [
        ['a', 'b'],
        ['c', 'd'],
      ],
      ['a', 'b', 'c', 'gone'],
    );
    expect(verdict).toEqual({ failing: [['c', 'd']], known: [['a', 'b']], stale: ['gone'] });
    expect(judge([], [])).toEqual({ failing: [], known: [], stale: [] });
  });
});
