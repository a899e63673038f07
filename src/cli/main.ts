// Each command loads only what it needs: `admin` must not pay for loading the whole service.

const USAGE = `usage: mediaforge <command>

  serve                                   run the service (default)
  admin user create <email> [--credits N] create a user
  admin user get <user_id>                show a user
  admin key create <user_id> [--name N] [--scopes a,b]
                                          create an API key (printed once)
  admin key revoke <key_id>               revoke an API key
  admin credits grant <user_id> <amount> [--reason R] [--op-id ID]
                                          grant (or, negative, take back) credits
  admin webhook set <key_id> <url>        set a key's webhook URL (prints the secret on first enablement)
  admin webhook clear <key_id>            clear a key's webhook (the next set rotates the secret)
  admin webhook deliveries <key_id> [--limit N]
                                          the key's webhook deliveries and their attempts, newest first

admin commands use MEDIAFORGE_URL (default http://127.0.0.1:8080) and MEDIAFORGE_ADMIN_TOKEN.`;

const [command = 'serve', ...rest] = process.argv.slice(2);
if (command === 'serve') {
  const { serve } = await import('./serve.ts');
  await serve();
} else if (command === 'admin') {
  const { runAdminCommand } = await import('./admin.ts');
  process.exitCode = await runAdminCommand(rest);
} else {
  process.stderr.write(
    `${command === 'help' || command === '--help' ? '' : `unknown command: ${command}\n\n`}${USAGE}\n`,
  );
  process.exitCode = command === 'help' || command === '--help' ? 0 : 2;
}
