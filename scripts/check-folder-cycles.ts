// Folder-level import cycles, part of `npm run lint:imports`. The no-import-loop
// rule (.dependency-cruiser.cjs) catches modules that import each other; folders
// can still form a knot with no two files in a loop (a/x imports b/y, b/z
// imports a/w), and then no folder can be read, tested or replaced on its own.
// This collapses the import graph of each package's src/ and of lib/ to folders
// and fails on any strongly connected component of more than one folder.
//
//   npx tsx scripts/check-folder-cycles.ts
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

/** The trees whose folders must not form a cycle. */
const ROOTS = ['packages', 'lib'];

/**
 * Folders known to be in one knot today, which issue 36's core work unties:
 * a component made of these alone is printed, not failed. Empty is the goal;
 * a folder listed here but in no component fails, so the list only shrinks.
 */
const KNOWN: readonly string[] = [];

/**
 * The folder a module belongs to, or undefined for one outside the checked trees:
 * the first folder under a package's src/ or under lib/ (lib/service/records is
 * lib/service's), and src/ or lib/ itself for a file directly in it (a package's
 * entry points, lib/config.ts).
 */
export function folderOf(path: string): string | undefined {
  const root = /^(packages\/[^/]+\/src|lib)\/(.+)$/.exec(path);
  if (!root) return undefined;
  const [, base, rest] = root;
  const slash = rest!.indexOf('/');
  return slash === -1 ? base : `${base}/${rest!.slice(0, slash)}`;
}

/** Folder -> the folders it imports from, from module-level edges (a folder's imports of itself dropped). */
export function folderGraph(edges: Iterable<readonly [from: string, to: string]>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    const a = folderOf(from);
    const b = folderOf(to);
    if (!a || !b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    if (!graph.has(b)) graph.set(b, new Set());
    if (a !== b) graph.get(a)!.add(b);
  }
  return graph;
}

/** The strongly connected components of more than one node (Tarjan's algorithm), each sorted, in sorted order. */
export function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  // Iterative, so a deep graph cannot overflow the call stack: each frame is a node and its successors still to visit.
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const frames: { node: string; successors: Iterator<string> }[] = [];
    const enter = (node: string) => {
      index.set(node, next);
      lowLink.set(node, next);
      next++;
      stack.push(node);
      onStack.add(node);
      frames.push({ node, successors: (graph.get(node) ?? new Set<string>()).values() });
    };
    enter(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const step = frame.successors.next();
      if (!step.done) {
        const successor = step.value;
        if (!index.has(successor)) enter(successor);
        else if (onStack.has(successor)) lowLink.set(frame.node, Math.min(lowLink.get(frame.node)!, index.get(successor)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) lowLink.set(parent.node, Math.min(lowLink.get(parent.node)!, lowLink.get(frame.node)!));
      if (lowLink.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1) found.push(component.sort());
    }
  }
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

export interface Verdict {
  /** Components with a folder not in the known list: each fails the check. */
  failing: string[][];
  /** Components of known folders alone: printed. */
  known: string[][];
  /** Known folders in no component any more: each fails the check until it leaves the list. */
  stale: string[];
}

export function judge(components: readonly string[][], knownFolders: readonly string[]): Verdict {
  const knownSet = new Set(knownFolders);
  const inSome = new Set(components.flat());
  return {
    failing: components.filter((c) => c.some((folder) => !knownSet.has(folder))),
    known: components.filter((c) => c.every((folder) => knownSet.has(folder))),
    stale: knownFolders.filter((folder) => !inSome.has(folder)),
  };
}

/** Every module-level import edge under ROOTS, as .dependency-cruiser.cjs resolves them (type-only and dynamic imports count). */
async function importEdges(): Promise<[string, string][]> {
  const options = await extractDepcruiseOptions('./.dependency-cruiser.cjs');
  const tsConfigFile = options.tsConfig?.fileName;
  const result = await cruise(ROOTS, options, {}, { tsConfig: tsConfigFile ? extractTSConfig(tsConfigFile) : undefined });
  const { modules } = result.output as ICruiseResult;
  return modules.flatMap((module) => module.dependencies.map((dependency): [string, string] => [module.source, dependency.resolved]));
}

async function main(): Promise<number> {
  const components = cycles(folderGraph(await importEdges()));
  const { failing, known, stale } = judge(components, KNOWN);
  for (const component of known) console.log(`known folder cycle (scripts/check-folder-cycles.ts KNOWN), to untie: ${component.join(' <-> ')}`);
  for (const component of failing) console.error(`folder cycle: ${component.join(' <-> ')}`);
  for (const folder of stale) console.error(`${folder} is in no folder cycle any more: remove it from KNOWN in scripts/check-folder-cycles.ts`);
  if (failing.length > 0) {
    console.error('Folders that import each other, through any of their files: move what both need below both, or merge them.');
  }
  if (failing.length === 0 && stale.length === 0) console.log(`no folder cycle outside the known ones (${ROOTS.join(', ')})`);
  return failing.length > 0 || stale.length > 0 ? 1 : 0;
}

const runDirectly = (() => {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();
if (runDirectly) process.exitCode = await main();
