export { type ApiReply, dispatch } from './dispatch.ts';
export { type EngineServer, type EngineServerProps, MAX_REQUEST_BYTES, startEngineServer } from './server.ts';
