export * from './cri.js';
export * from './tailer.js';
