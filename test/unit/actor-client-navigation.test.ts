import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Editors find a command's handler by "go to definition" on a typed client's call: that works only while the
// client types (actors/user.ts, actors/project.ts) keep each method linked to its handler's declaration.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CALLER = join(ROOT, 'test/unit/actor-client-caller.virtual.ts');
const CALLER_TEXT = `
import type { ProjectCommands, UserCredits } from '../../actors/index.ts';
declare const credits: Pick<UserCredits, 'refund'>;
declare const commands: ProjectCommands;
void credits.refund('u1', { op_id: 'o1', amount: 1 });
void commands.add_clip;
void commands.request_turn;
void commands.export_completed;
`;

function languageService(): ts.LanguageService {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  return ts.createLanguageService({
    getScriptFileNames: () => [CALLER],
    getScriptVersion: () => '1',
    getScriptSnapshot: (file) => {
      if (file === CALLER) return ts.ScriptSnapshot.fromString(CALLER_TEXT);
      return ts.sys.fileExists(file) ? ts.ScriptSnapshot.fromString(readFileSync(file, 'utf8')) : undefined;
    },
    getCurrentDirectory: () => ROOT,
    getCompilationSettings: () => options,
    getDefaultLibFileName: (settings) => ts.getDefaultLibFilePath(settings),
    fileExists: (file) => file === CALLER || ts.sys.fileExists(file),
    readFile: (file) => (file === CALLER ? CALLER_TEXT : ts.sys.readFile(file)),
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  });
}

describe('typed actor clients', () => {
  const service = languageService();
  /** Where "go to definition" on `<receiver>.<name>` in the caller lands: `file: text`. */
  const definitionOf = (call: string) => {
    const at = CALLER_TEXT.indexOf(call);
    assert.ok(at >= 0, call);
    const found = service.getDefinitionAtPosition(CALLER, at + call.indexOf('.') + 1) ?? [];
    return found.map(({ fileName, textSpan }) => {
      const text = readFileSync(fileName, 'utf8').slice(textSpan.start, textSpan.start + textSpan.length);
      return `${relative(ROOT, fileName)}: ${text}`;
    });
  };

  it('lead "go to definition" from a call to the handler of its command', () => {
    assert.deepEqual(definitionOf('credits.refund'), ['actors/user.ts: refund']);
    assert.deepEqual(definitionOf('commands.add_clip'), ['actors/project-edits.ts: add_clip']);
    assert.deepEqual(definitionOf('commands.request_turn'), ['actors/project-turns.ts: request_turn']);
    assert.deepEqual(definitionOf('commands.export_completed'), [
      'actors/project-exports.ts: export_completed',
    ]);
  });

  it('type-check the calls they lead from', () => {
    const problems = service
      .getSemanticDiagnostics(CALLER)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(problems, []);
  });
});
