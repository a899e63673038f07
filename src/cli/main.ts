// Each command loads only what it needs: `admin` must not pay for loading the whole service.

const USAGE = `usage: mediaforge <command>

  serve                                   run the service (default)
  help, --help, -h                        print this help

  admin user list [--limit N] [--cursor C] [--all] [--json]
                                          list users in creation order, a page at a time (or --all)
  admin user create <email> [--credits N] create a user
  admin user get <user_id>                show a user
  admin key list <user_id> [--json]       list a user's API keys, revoked ones included
  admin key create <user_id> [--name N] [--scopes a,b]
                                          create an API key (printed once)
  admin key revoke <key_id>               revoke an API key
  admin password set <user_id> [--password-stdin] [--json]
                                          set a user's sign-in password, typed at the prompt (not
                                          echoed) or piped in; never given on the command line
  admin sign-in-link create <user_id> [--json]
                                          make a one-time sign-in link (printed with its expiry)
  admin credits grant <user_id> <amount> [--reason R] [--op-id ID]
                                          grant (or, negative, take back) credits
  admin webhook set <key_id> <url>        set a key's webhook URL (prints the secret on first enablement)
  admin webhook clear <key_id>            clear a key's webhook (the next set rotates the secret)
  admin webhook deliveries <key_id> [--limit N]
                                          the key's webhook deliveries and their attempts, newest first

admin commands use MEDIAFORGE_URL (default http://127.0.0.1:8080) and MEDIAFORGE_ADMIN_TOKEN.`;

const HELP = new Set(['help', '--help', '-h']);

const [command = 'serve', ...rest] = process.argv.slice(2);
if (HELP.has(command) || (command === 'admin' && HELP.has(rest[0] ?? ''))) {
  // Asked for: the usage is the answer, on stdout (`mediaforge --help | less`).
  process.stdout.write(`${USAGE}\n`);
} else if (command === 'serve') {
  const { serve } = await import('./serve.ts');
  await serve();
} else if (command === 'admin') {
  const { runAdminCommand } = await import('./admin.ts');
  process.exitCode = await runAdminCommand(rest);
} else {
  process.stderr.write(`unknown command: ${command}\n\n${USAGE}\n`);
  process.exitCode = 2;
}
