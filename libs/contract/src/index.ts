export * from './names.js';
export * from './schemas.js';
export * from './responses.js';
export * from './to-domain.js';
