// @ts-check
// A folder's index.ts re-exports everything the folder offers (DESIGN.md §5.1): every export of every sibling
// module, and every sub-folder's index.ts. It lists names or uses `export * from`; it never exports a default.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import ts from 'typescript';

/** The names a module exports (declarations, `export { … }` lists and `export … from` re-exports). */
function exportedNames(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const names = new Set();
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      if (statement.exportClause && ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) names.add(element.name.text);
      }
      continue;
    }
    const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined;
    if (!modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name)) names.add(declaration.name.text);
      }
    } else if ('name' in statement && statement.name && ts.isIdentifier(statement.name)) {
      names.add(statement.name.text);
    }
  }
  return names;
}

/** @type {import('eslint').Rule.RuleModule} */
export const completeBarrel = {
  meta: {
    type: 'problem',
    docs: { description: 'index.ts re-exports every module and sub-folder of its folder' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    if (basename(file) !== 'index.ts') return {};
    const folder = dirname(file);
    return {
      'Program:exit'(program) {
        const starred = new Set();
        const named = new Map();
        for (const node of program.body) {
          if (node.type === 'ExportDefaultDeclaration') {
            context.report({ node, message: 'A barrel has named exports only.' });
          }
          if (node.type === 'ExportAllDeclaration' && !node.exported) starred.add(String(node.source.value));
          if (node.type === 'ExportNamedDeclaration' && node.source) {
            const source = String(node.source.value);
            const names = named.get(source) ?? new Set();
            for (const specifier of node.specifiers) {
              if (specifier.local.type === 'Identifier') names.add(specifier.local.name);
            }
            named.set(source, names);
          }
        }
        for (const entry of readdirSync(folder).sort()) {
          const path = join(folder, entry);
          if (statSync(path).isDirectory()) {
            if (!existsSync(join(path, 'index.ts'))) continue;
            const source = `./${entry}/index.ts`;
            if (!starred.has(source) && !named.has(source)) {
              context.report({ node: program, message: `index.ts does not re-export ${source}.` });
            }
            continue;
          }
          if (!entry.endsWith('.ts') || entry === 'index.ts' || entry.endsWith('.d.ts')) continue;
          const source = `./${entry}`;
          if (starred.has(source)) continue;
          const listed = named.get(source) ?? new Set();
          const missing = [...exportedNames(path)].filter((name) => !listed.has(name));
          if (missing.length > 0) {
            context.report({
              node: program,
              message: `index.ts does not re-export ${missing.join(', ')} from ${source}.`,
            });
          }
        }
      },
    };
  },
};
