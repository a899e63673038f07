// The baseline of the HTTP-front benchmark: a bare uWebSockets.js handler answering a fixed JSON body.
import * as uws from 'uWebSockets.js';

const body = process.argv[2] ?? '{}';
uws
  .App()
  .get('/api/v1/models', (res) => {
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', 'application/json; charset=utf-8').end(body);
    });
  })
  .listen('127.0.0.1', 0, (token) => {
    if (!token) process.exit(1);
    process.stdout.write(
      `listening on http://127.0.0.1:${uws.us_socket_local_port(token as unknown as uws.us_socket)}\n`,
    );
  });
