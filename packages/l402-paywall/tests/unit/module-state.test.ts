// No module-level mutable variable in the library's sources: state shared by
// every importer in a process (one client's proofs seen by another, one
// paywall's decode cache read by the next) belongs to the object that owns it,
// and pure precomputation needs no reassignable binding. Read with the
// TypeScript compiler, so a `let` in a string or a comment is not one.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleVariables, sourceFiles } from '../support/module-variables.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

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
