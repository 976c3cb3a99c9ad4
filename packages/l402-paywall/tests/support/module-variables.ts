// The module-level `let` and `var` declarations of a TypeScript source, read
// with the TypeScript compiler (so a `let` in a string or a comment is not
// one): the library's module-state test and the service's use it.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

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

/** The .ts files under `dir`, at any depth. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}
