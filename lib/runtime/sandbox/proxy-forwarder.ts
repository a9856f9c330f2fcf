/**
 * The sandbox's one way to the network proxy: the sandbox keeps no network of its own
 * (`--unshare-net`), so a tiny forwarder, the plan process's parent inside the sandbox, listens on
 * the namespace's own 127.0.0.1:{@link SANDBOX_PROXY_PORT} and carries each connection to the
 * proxy's unix socket, bound into the sandbox at {@link SANDBOX_PROXY_DIR}. It runs on the node the
 * harness runs on (on the read-only root: no socat, nothing to install), as `node -e`, so it needs
 * no file of plangate's inside the sandbox. It grants nothing: plan code that skips it reaches the
 * same proxy, or nothing.
 */

/** Where the proxy's socket directory appears inside the sandbox (its /tmp is a fresh tmpfs). */
export const SANDBOX_PROXY_DIR = '/tmp/plangate-proxy';
/** The proxy socket's file name in its directory. */
export const PROXY_SOCKET_NAME = 'proxy.sock';
/** The forwarder's port on the sandbox's own loopback (a fresh namespace: nothing else listens there). */
export const SANDBOX_PROXY_PORT = 3128;

/** The proxy as the plan process's environment names it. */
export const SANDBOX_PROXY_URL = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;

/**
 * argv: socket, port, then the command to run once it listens; exits as the command did.
 * CommonJS (`node -e`), no dependencies.
 */
const FORWARDER_SOURCE = `
const net = require('node:net');
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const [socket, port, file, ...args] = process.argv.slice(1);
const server = net.createServer((inside) => {
  const outside = net.connect(socket);
  inside.pipe(outside);
  outside.pipe(inside);
  inside.on('error', () => outside.destroy());
  outside.on('error', () => inside.destroy());
});
server.on('error', (error) => {
  process.stderr.write('plangate: the network forwarder could not listen: ' + error.message + '\\n');
  process.exit(126);
});
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(file, args, { stdio: 'inherit' });
  child.on('error', () => process.exit(127));
  child.on('exit', (code, signal) => process.exit(signal ? 128 + (constants.signals[signal] || 0) : (code ?? 1)));
});
`;

/** The argv that runs `command` with the forwarder in front of it. */
export function forwardedCommand(command: readonly string[]): string[] {
  return [
    process.execPath,
    '-e',
    FORWARDER_SOURCE,
    `${SANDBOX_PROXY_DIR}/${PROXY_SOCKET_NAME}`,
    String(SANDBOX_PROXY_PORT),
    ...command,
  ];
}
