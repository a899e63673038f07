import { parseArgs } from 'node:util';
import { loadCliSettings } from '../platform/index.ts';
import { accountCommandFor, type AccountCommand } from './admin-accounts.ts';
import { callAdmin, printable, UnreachableError, UsageError, type AdminCall } from './admin-http.ts';

const NEGATIVE_INTEGER = /^-\d+$/;
const NEGATIVE_MARK = 'negative:';

/** Maps `mediaforge admin <noun> <verb> ...` onto one admin API call (docs/operator.md, CLI). */
export function adminCallFor(args: string[]): AdminCall {
  const { positionals, values } = parseArgs({
    // parseArgs would read `-100` as options; negative amounts are marked so they stay positional.
    args: args.map((arg) => (NEGATIVE_INTEGER.test(arg) ? `${NEGATIVE_MARK}${arg.slice(1)}` : arg)),
    allowPositionals: true,
    options: {
      credits: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      reason: { type: 'string' },
      'op-id': { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' }, // these commands always print the API's JSON
    },
  });
  const [noun, verb, first, second] = positionals;
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new UsageError(`missing ${what}`);
    return encodeURIComponent(value);
  };
  const integer = (raw: string, what: string) => {
    const value = raw.startsWith(NEGATIVE_MARK) ? `-${raw.slice(NEGATIVE_MARK.length)}` : raw;
    if (!/^-?\d+$/.test(value)) throw new UsageError(`${what} must be an integer`);
    return Number(value);
  };
  switch (`${noun} ${verb}`) {
    case 'user create':
      return {
        method: 'POST',
        path: '/users',
        body: {
          email: decodeURIComponent(need(first, '<email>')),
          ...(values.credits ? { credits: integer(values.credits, '--credits') } : {}),
        },
      };
    case 'user get':
      return { method: 'GET', path: `/users/${need(first, '<user_id>')}` };
    case 'key create':
      return {
        method: 'POST',
        path: `/users/${need(first, '<user_id>')}/keys`,
        body: {
          scopes: values.scopes
            ? values.scopes
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean)
            : [],
          ...(values.name ? { name: values.name } : {}),
        },
      };
    case 'key revoke':
      return { method: 'DELETE', path: `/keys/${need(first, '<key_id>')}` };
    case 'credits grant':
      return {
        method: 'POST',
        path: `/users/${need(first, '<user_id>')}/credits`,
        body: {
          amount: integer(second ?? '', '<amount>'),
          ...(values.reason ? { reason: values.reason } : {}),
          ...(values['op-id'] ? { op_id: values['op-id'] } : {}),
        },
      };
    case 'webhook set':
      return { method: 'PUT', path: `/keys/${need(first, '<key_id>')}/webhook`, body: { url: second ?? '' } };
    case 'webhook clear':
      return { method: 'DELETE', path: `/keys/${need(first, '<key_id>')}/webhook` };
    case 'webhook deliveries': {
      const limit = values.limit ? `?limit=${integer(values.limit, '--limit')}` : '';
      return { method: 'GET', path: `/keys/${need(first, '<key_id>')}/deliveries${limit}` };
    }
    default:
      throw new UsageError(`unknown admin command: ${positionals.join(' ') || '(none)'}`);
  }
}

/**
 * Runs one admin command. The account commands (`user list`, `key list`, `password set`, `sign-in-link
 * create`) print for people unless `--json`; the others print the API's JSON answer. The exit code is 0 only for
 * a 2xx answer.
 */
export async function runAdminCommand(args: string[]): Promise<number> {
  const settings = loadCliSettings();
  let run: AccountCommand | AdminCall;
  try {
    run = accountCommandFor(args) ?? adminCallFor(args);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`mediaforge admin: ${error.message} (see: mediaforge help)\n`);
    return 2;
  }
  if (!settings.adminToken) {
    process.stderr.write('mediaforge admin: set MEDIAFORGE_ADMIN_TOKEN to the service admin token\n');
    return 2;
  }
  const connection = { url: settings.url, adminToken: settings.adminToken };
  try {
    if (typeof run === 'function') return await run(connection);
    const answer = await callAdmin(connection, run);
    process.stdout.write(`${printable(answer)}\n`);
    return answer.ok ? 0 : 1;
  } catch (error) {
    if (!(error instanceof UnreachableError)) throw error;
    process.stderr.write(`mediaforge admin: ${error.message}\n`);
    return 1;
  }
}
