// No module-level mutable variable in the library's sources: state shared by
// every importer in a process (one client's proofs seen by another, one
// paywall's decode cache read by the next) belongs to the object that owns it,
// and pure precomputation needs no reassignable binding. Read with the
// TypeScript compiler, so a `let` in a string or a comment is not one.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

export interface ModuleVariable {
  line: number;
  text: string;
}

/**
 * The `let` and `var` declarations of a module's own scope: those outside every
 * function, method, accessor, class and static block, including ones in a
 * top-level block or `if` (still the module's), but not a top-level loop's own
 * `for (let ...)` counter, which lives for the loop alone.
 */
export function moduleVariables(fileName: string, source: string): ModuleVariable[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: ModuleVariable[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) || ts.isClassLike(node) || ts.isClassStaticBlockDeclaration(node)) return;
    if (ts.isVariableDeclarationList(node)) {
      const blockScoped = node.flags & (ts.NodeFlags.Const | ts.NodeFlags.Using | ts.NodeFlags.AwaitUsing);
      const loopCounter =
        (ts.isForStatement(node.parent) || ts.isForOfStatement(node.parent) || ts.isForInStatement(node.parent)) && node.flags & ts.NodeFlags.Let;
      if (!blockScoped && !loopCounter) {
        const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
        found.push({ line: line + 1, text: node.getText(file).split('\n')[0]! });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('module-level state', () => {
  it('finds the module-level let and var a source declares, and nothing scoped to a function, class or loop', () => {
    const source = [
      'let cache: string | undefined;', // 1: found
      'export var count = 0;', // 2: found
      'const table = new Map<string, number>();', // a binding that cannot be reassigned
      'if (typeof globalThis.x === "undefined") {',
      '  let nested = 1;', // 5: found (still the module's scope)
      '}',
      'for (let i = 0; i < 2; i++) {}', // the loop's own counter
      'for (var j = 0; j < 2; j++) {}', // 8: found (var leaks to the module)
      'function f() { let local = 1; return local; }',
      'const g = () => { var inArrow = 2; return inArrow; };',
      'class C { static { let inStatic = 3; void inStatic; } m() { let inMethod = 4; return inMethod; } }',
      'const text = "let notCode = 1;"; // let inComment',
    ].join('\n');
    expect(moduleVariables('fixture.ts', source)).toEqual([
      { line: 1, text: 'let cache: string | undefined' },
      { line: 2, text: 'var count = 0' },
      { line: 5, text: 'let nested = 1' },
      { line: 8, text: 'var j = 0' },
    ]);
  });

  it('no source file of the library declares a module-level let or var', () => {
    const offenders: string[] = [];
    for (const path of sourceFiles(SRC)) {
      const name = relative(SRC, path).split('\\').join('/');
      for (const found of moduleVariables(name, readFileSync(path, 'utf8'))) offenders.push(`src/${name}:${found.line}: ${found.text}`);
    }
    expect(offenders).toEqual([]);
  });
});
