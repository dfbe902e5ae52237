/**
 * Why reading an image from its registry failed. The message is meant for CC's user (it ends up in the
 * StagingError), so it names the image and the registry and never carries credentials.
 */
export type RegistryErrorKind = 'invalid-reference' | 'not-found' | 'denied' | 'unreachable' | 'unexpected';

export class RegistryError extends Error {
  override readonly name = 'RegistryError';

  constructor(
    readonly kind: RegistryErrorKind,
    message: string,
    /** The HTTP status behind the error, when there was an answer. */
    readonly status?: number,
  ) {
    super(message);
  }
}
