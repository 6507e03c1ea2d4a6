'use strict';
// The BFF's recommendation backend: a second local server, keep-alive capable.
// Runs outside the BFF's process tree; exits when the BFF (argv[3]) is gone.
const http = require('node:http');
const port = Number(process.argv[2]);
const parent = Number(process.argv[3] || 0);
const body = JSON.stringify({ ids: Array.from({ length: 20 }, (_, i) => 10000 + i * 3) });
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
// The previous case's backend may hold the port for up to half a second after
// its BFF is gone (it polls its parent): retry rather than exit, or every
// call of this case's BFF would fail with 502.
let attempts = 0;
server.on('error', (e) => {
  if (e.code === 'EADDRINUSE' && ++attempts < 100) {
    setTimeout(() => server.listen(port, '127.0.0.1'), 100);
  } else {
    throw e;
  }
});
server.listen(port, '127.0.0.1');
if (parent) {
  setInterval(() => {
    try { process.kill(parent, 0); } catch (e) { if (e.code === 'ESRCH') process.exit(0); }
  }, 500).unref();
}
