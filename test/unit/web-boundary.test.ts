// The dashboard (web/) shares the server's shapes instead of copying them: a web/ file imports only web/ and
// schemas/ (and Preact; TypeBox for types only), what its bundle runs of schemas/ is pure (no package, nothing
// of Node), and no web/ file declares a shape by a name the schemas already give, nor spells an answer inline.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WEB = join(ROOT, 'web', 'src');
const SCHEMAS = join(ROOT, 'schemas');
/** The one web/ file that names the server's shapes (Static<> of the schemas) for the rest of web/. */
const API_TYPES = join(WEB, 'api-types.ts');
/** Packages the browser code may import at run time. */
const BROWSER_PACKAGES = /^preact(\/|$)/;

function filesUnder(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return filesUnder(path, pattern);
    return pattern.test(entry) ? [path] : [];
  });
}

function parse(file: string): ts.SourceFile {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, kind);
}

interface ModuleImport {
  specifier: string;
  /** Erased from the emitted code (`import type`, `export type`, a type-only import()). */
  typeOnly: boolean;
}

/** Every module a file names: imports, re-exports, dynamic imports and `import('x')` types. */
function importsOf(source: ts.SourceFile): ModuleImport[] {
  const found: ModuleImport[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.importClause?.isTypeOnly === true });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const isRelative = (specifier: string): boolean => specifier.startsWith('.');
const inside = (file: string, dir: string): boolean => file === dir || file.startsWith(dir + sep);
const show = (file: string): string => relative(ROOT, file);

/** The names a module exports: its exported declarations and `export { … }` lists. */
function exportedNames(source: ts.SourceFile): string[] {
  const names: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      if (statement.exportClause && ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) names.push(element.name.text);
      }
      continue;
    }
    const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined;
    if (!modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name)) names.push(declaration.name.text);
      }
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) &&
      statement.name
    ) {
      names.push(statement.name.text);
    }
  }
  return names;
}

/** The names a file declares: its top-level values, and its types at any depth. */
function declaredNames(source: ts.SourceFile): { name: string; line: number }[] {
  const found: { name: string; line: number }[] = [];
  const add = (name: ts.Node | undefined): void => {
    if (name && ts.isIdentifier(name)) {
      found.push({ name: name.text, line: source.getLineAndCharacterOfPosition(name.getStart()).line + 1 });
    }
  };
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) statement.declarationList.declarations.forEach((d) => add(d.name));
    else if (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) add(statement.name);
  }
  const visit = (node: ts.Node): void => {
    if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node)) {
      add(node.name);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const webFiles = filesUnder(WEB, /\.(ts|tsx)$/);

describe('the dashboard takes its shapes from schemas/', () => {
  it('imports nothing outside web/ and schemas/ (Preact at run time, TypeBox for types only)', () => {
    const offenders: string[] = [];
    for (const file of webFiles) {
      for (const { specifier, typeOnly } of importsOf(parse(file))) {
        if (isRelative(specifier)) {
          const target = resolve(dirname(file), specifier);
          if (!inside(target, join(ROOT, 'web')) && !inside(target, SCHEMAS)) {
            offenders.push(`${show(file)} imports ${specifier}`);
          }
        } else if (!BROWSER_PACKAGES.test(specifier) && !(typeOnly && specifier === 'typebox')) {
          offenders.push(`${show(file)} imports ${typeOnly ? 'the types of ' : ''}${specifier}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('runs only pure modules of schemas/ (no package, nothing of Node, in the bundle)', () => {
    const offenders: string[] = [];
    const seen = new Set<string>();
    const queue = webFiles.flatMap((file) =>
      importsOf(parse(file))
        .filter((i) => !i.typeOnly && isRelative(i.specifier))
        .map((i) => resolve(dirname(file), i.specifier))
        .filter((target) => !inside(target, join(ROOT, 'web'))),
    );
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      if (seen.has(file)) continue;
      seen.add(file);
      if (!existsSync(file)) {
        offenders.push(`${show(file)} does not exist`);
        continue;
      }
      for (const { specifier, typeOnly } of importsOf(parse(file))) {
        if (typeOnly) continue;
        if (isRelative(specifier)) queue.push(resolve(dirname(file), specifier));
        else offenders.push(`${show(file)} imports ${specifier} at run time`);
      }
    }
    assert.ok(seen.size > 0, 'the dashboard takes some value from schemas/ (the scopes, the tracks)');
    assert.deepEqual(offenders, []);
  });

  it('declares no shape by a name the schemas (or api-types.ts) give', () => {
    const known = new Set([
      ...filesUnder(SCHEMAS, /\.ts$/).flatMap((file) => exportedNames(parse(file))),
      ...(existsSync(API_TYPES) ? exportedNames(parse(API_TYPES)) : []),
    ]);
    assert.ok(known.has('SCOPES') && known.has('JobView'), 'the known names include the scopes and the job');
    const offenders = webFiles
      .filter((file) => file !== API_TYPES)
      .flatMap((file) =>
        declaredNames(parse(file))
          .filter(({ name }) => known.has(name))
          .map(({ name, line }) => `${show(file)}:${line} declares ${name}`),
      );
    assert.deepEqual(offenders, []);
  });

  it('spells no shape in api-types.ts: its types are made of the schemas, its values re-exported', () => {
    assert.ok(existsSync(API_TYPES), 'web/src/api-types.ts gathers the shapes');
    const source = parse(API_TYPES);
    const offenders: string[] = [];
    const visit = (node: ts.Node): void => {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      if (ts.isInterfaceDeclaration(node) || ts.isEnumDeclaration(node))
        offenders.push(`${line}: a declaration`);
      if (ts.isTypeLiteralNode(node)) offenders.push(`${line}: an object type`);
      // A literal may name a key (`Job['status']`, `Sent<T, 'name'>`), never spell a value a shape takes.
      if (ts.isLiteralTypeNode(node)) {
        const namesKey =
          (ts.isIndexedAccessTypeNode(node.parent) && node.parent.indexType === node) ||
          ts.isTypeReferenceNode(node.parent);
        if (!namesKey) offenders.push(`${line}: a literal type`);
      }
      if (ts.isVariableStatement(node) || ts.isFunctionDeclaration(node)) offenders.push(`${line}: a value`);
      ts.forEachChild(node, visit);
    };
    visit(source);
    assert.deepEqual(offenders, []);
  });

  it('spells no answer inline in a call of the API (dash<{ … }>, v1<{ … }>)', () => {
    const offenders: string[] = [];
    for (const file of webFiles) {
      const source = parse(file);
      const visit = (node: ts.Node): void => {
        if (
          ts.isCallExpression(node) &&
          ts.isIdentifier(node.expression) &&
          ['dash', 'v1'].includes(node.expression.text) &&
          node.typeArguments?.some((argument) => ts.isTypeLiteralNode(argument))
        ) {
          const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
          offenders.push(`${show(file)}:${line}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    assert.deepEqual(offenders, []);
  });
});
