// The watch engine's public surface, for the HTTP layer.
export { WatchHub, type HubOptions, type HubStats } from './hub.ts';
export { Watcher, type WatchOptions, type WatchRequest, type CloseReason } from './watcher.ts';
export { jsonEncoder, OutEvent, type Encoder, type EncodableEvent, type WatchEventType } from './encode.ts';
export { parseWatchOptions, isWatch } from './params.ts';
export { defaultWindowBytes, type WindowOptions } from './window.ts';
export { watchMetrics, type WatchMetrics } from './metrics.ts';
