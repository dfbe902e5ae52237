/** Client TLS for callbacks: CC's internal API usually wants mutual TLS with its own CA. */
import { type LoadedTls, type TlsFiles, loadTlsFiles } from '@opi/runtime/tls-files';
import { CallbackTlsError } from './errors.js';

export type { LoadedTls };
export type CallbackTls = TlsFiles;

/** The callback identity read and checked at start-up; a bad file throws CallbackTlsError naming it. */
export function loadTls(opts: CallbackTls): LoadedTls {
  return loadTlsFiles(
    { label: 'callback TLS', error: (message, file) => new CallbackTlsError(message, file) },
    opts,
  );
}
