// How the `mediaforge admin` commands talk to the service: one admin API call with the operator's token.

/** One admin API call: a method and a path under `/api/admin/v1`, with an optional JSON body. */
export interface AdminCall {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
}

/** The service's answer: its status, its body as text and, when it is JSON, parsed. */
export interface AdminAnswer {
  status: number;
  ok: boolean;
  text: string;
  json: unknown;
}

/** Where the CLI finds the service, and the admin token (`loadCliSettings`). */
export interface AdminSettings {
  url: string;
  adminToken: string;
}

/** The service could not be reached (refused, no route, DNS): the message says why. */
export class UnreachableError extends Error {}

/** A command line the CLI cannot run: the message says what is wrong (exit code 2). */
export class UsageError extends Error {}

/** Makes one admin API call; rejects with UnreachableError when no answer comes. */
export async function callAdmin(settings: AdminSettings, call: AdminCall): Promise<AdminAnswer> {
  let response: Response;
  try {
    response = await fetch(`${settings.url}/api/admin/v1${call.path}`, {
      method: call.method,
      headers: {
        authorization: `Bearer ${settings.adminToken}`,
        ...(call.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(call.body ? { body: JSON.stringify(call.body) } : {}),
    });
  } catch (error) {
    throw new UnreachableError(`cannot reach ${settings.url}: ${(error as Error).message}`);
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, ok: response.ok, text, json };
}

/** An answer as the JSON-printing commands show it: indented JSON, or the body as received. */
export function printable(answer: AdminAnswer): string {
  return answer.json === undefined ? answer.text : JSON.stringify(answer.json, null, 2);
}

/** The API's error message of a refused call (`{ error }`), else its status. */
export function errorMessage(answer: AdminAnswer): string {
  const error = (answer.json as { error?: unknown } | undefined)?.error;
  return typeof error === 'string' ? `${error} (${answer.status})` : `the service answered ${answer.status}`;
}
