// The operator's account commands (docs/operator.md, "CLI"): list users and a user's keys, set a password, make a
// sign-in link. They print for people — aligned columns, one fact per line — and, with `--json`, the API's
// answers as they are, for scripts.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  callAdmin,
  errorMessage,
  printable,
  UsageError,
  type AdminAnswer,
  type AdminCall,
  type AdminSettings,
} from './admin-http.ts';
import { promptSecret, readPipedSecret, SecretInputError } from './read-secret.ts';

/** A parsed account command, ready to run against the service; resolves with the exit code. */
export type AccountCommand = (settings: AdminSettings) => Promise<number>;

interface User {
  id: string;
  email: string;
  credits: number;
}
interface UsersPage {
  users: User[];
  next_cursor: string | null;
}
interface Key {
  id: string;
  name: string;
  scopes: string[];
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

/** Users per page when `--all` follows the cursor (the API's largest page). */
const ALL_PAGE_SIZE = 1000;

const JSON_OPTION = { json: { type: 'boolean' } } as const;

/**
 * The account command `args` names (`user list`, `key list`, `password set`, `sign-in-link create`), parsed;
 * null for any other command. Throws UsageError for a wrong command line.
 */
export function accountCommandFor(args: string[]): AccountCommand | null {
  const [noun, verb, ...rest] = args;
  switch (`${noun} ${verb}`) {
    case 'user list':
      return userList(rest);
    case 'key list':
      return keyList(rest);
    case 'password set':
      return passwordSet(rest);
    case 'sign-in-link create':
      return signInLinkCreate(rest);
    default:
      return null;
  }
}

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function userIdFrom(positionals: string[], command: string): string {
  const [userId, ...extra] = positionals;
  if (!userId) throw new UsageError(`missing <user_id> (${command} <user_id>)`);
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`);
  return userId;
}

function positiveInteger(raw: string | undefined, what: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new UsageError(`${what} must be an integer`);
  return Number(raw);
}

/** Prints a refused call: the API's JSON on stdout with `--json` (as every admin command does), else a line on stderr. */
function refused(answer: AdminAnswer, json: boolean | undefined): number {
  if (json) process.stdout.write(`${printable(answer)}\n`);
  else process.stderr.write(`mediaforge admin: ${errorMessage(answer)}\n`);
  return 1;
}

/** Rows under a header, in columns as wide as their widest cell, two spaces apart. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

/** `user list [--limit N] [--cursor C] [--all] [--json]`: a page of users in creation order, or all of them. */
function userList(args: string[]): AccountCommand {
  const { values, positionals } = parse(args, {
    ...JSON_OPTION,
    limit: { type: 'string' },
    cursor: { type: 'string' },
    all: { type: 'boolean' },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  const limit = positiveInteger(values.limit, '--limit');
  const pageCall = (cursor: string | undefined): AdminCall => {
    const query = new URLSearchParams();
    const size = limit ?? (values.all ? ALL_PAGE_SIZE : undefined);
    if (size !== undefined) query.set('limit', String(size));
    if (cursor !== undefined) query.set('cursor', cursor);
    return { method: 'GET', path: `/users${query.size > 0 ? `?${query}` : ''}` };
  };
  return async (settings) => {
    const users: User[] = [];
    let cursor = values.cursor;
    let page: UsersPage;
    do {
      const answer = await callAdmin(settings, pageCall(cursor));
      if (!answer.ok) return refused(answer, values.json);
      page = answer.json as UsersPage;
      users.push(...page.users);
      cursor = page.next_cursor ?? undefined;
    } while (values.all && cursor !== undefined);

    if (values.json) {
      process.stdout.write(`${JSON.stringify({ users, next_cursor: page.next_cursor }, null, 2)}\n`);
      return 0;
    }
    const lines =
      users.length === 0
        ? ['no users']
        : [
            formatTable(
              ['ID', 'EMAIL', 'CREDITS'],
              users.map((user) => [user.id, user.email, String(user.credits)]),
            ),
          ];
    if (page.next_cursor !== null) {
      const size = values.limit ? ` --limit ${values.limit}` : '';
      lines.push('', `more: mediaforge admin user list${size} --cursor ${page.next_cursor}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  };
}

/** `key list <user_id> [--json]`: the user's API keys, revoked ones included, with their scopes. */
function keyList(args: string[]): AccountCommand {
  const { values, positionals } = parse(args, JSON_OPTION);
  const userId = userIdFrom(positionals, 'key list');
  return async (settings) => {
    const answer = await callAdmin(settings, {
      method: 'GET',
      path: `/users/${encodeURIComponent(userId)}/keys`,
    });
    if (!answer.ok) return refused(answer, values.json);
    if (values.json) {
      process.stdout.write(`${printable(answer)}\n`);
      return 0;
    }
    const { keys } = answer.json as { keys: Key[] };
    const text =
      keys.length === 0
        ? `no API keys for ${userId}`
        : formatTable(
            ['ID', 'NAME', 'PREFIX', 'CREATED', 'STATUS', 'SCOPES'],
            keys.map((key) => [
              key.id,
              key.name,
              key.prefix,
              key.created_at,
              key.revoked_at ? `revoked ${key.revoked_at}` : 'active',
              key.scopes.join(','),
            ]),
          );
    process.stdout.write(`${text}\n`);
    return 0;
  };
}

/**
 * `password set <user_id> [--password-stdin] [--json]`: the password is typed at the terminal (twice, not
 * echoed) or piped in; it is never taken from the command line, which other users of the machine see in `ps`.
 */
function passwordSet(args: string[]): AccountCommand {
  const { values, positionals } = parse(args, { ...JSON_OPTION, 'password-stdin': { type: 'boolean' } });
  if (positionals.length > 1) {
    throw new UsageError(
      'the password is never taken from the command line (ps shows it to every user): ' +
        'type it when asked, or pipe it in with --password-stdin',
    );
  }
  const id = userIdFrom(positionals, 'password set');
  const piped = values['password-stdin'] === true;
  if (!piped && !process.stdin.isTTY) {
    throw new UsageError('no terminal to type the password at: pipe it in with --password-stdin');
  }
  const path = `/users/${encodeURIComponent(id)}`;
  return async (settings) => {
    let password: string;
    try {
      if (piped) {
        password = await readPipedSecret();
      } else {
        // An unknown user is reported before a password is typed for nothing.
        const user = await callAdmin(settings, { method: 'GET', path });
        if (!user.ok) return refused(user, values.json);
        password = await promptSecret(`New password for ${id}: `);
        if ((await promptSecret('Repeat it: ')) !== password) {
          process.stderr.write('mediaforge admin: the two passwords differ; nothing was changed\n');
          return 1;
        }
      }
    } catch (error) {
      if (!(error instanceof SecretInputError)) throw error;
      process.stderr.write(`mediaforge admin: ${error.message}; nothing was changed\n`);
      return 1;
    }
    const answer = await callAdmin(settings, {
      method: 'POST',
      path: `${path}/password`,
      body: { password },
    });
    if (!answer.ok) return refused(answer, values.json);
    process.stdout.write(values.json ? `${printable(answer)}\n` : `password set for ${id}\n`);
    return 0;
  };
}

/** `sign-in-link create <user_id> [--json]`: a one-time sign-in URL for the user, and when it expires. */
function signInLinkCreate(args: string[]): AccountCommand {
  const { values, positionals } = parse(args, JSON_OPTION);
  const userId = userIdFrom(positionals, 'sign-in-link create');
  return async (settings) => {
    const answer = await callAdmin(settings, {
      method: 'POST',
      path: `/users/${encodeURIComponent(userId)}/sign-in-links`,
    });
    if (!answer.ok) return refused(answer, values.json);
    if (values.json) {
      process.stdout.write(`${printable(answer)}\n`);
      return 0;
    }
    const link = answer.json as { url: string; expires_at: string };
    const minutes = Math.max(0, Math.round((Date.parse(link.expires_at) - Date.now()) / 60_000));
    process.stdout.write(
      `${link.url}\nexpires ${link.expires_at} (in ${minutes} minutes); it signs ${userId} in once\n`,
    );
    return 0;
  };
}
