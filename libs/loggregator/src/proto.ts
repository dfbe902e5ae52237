/** The Loggregator v2 Ingress service, loaded from the vendored protos (see proto/README.md). */
import { type GrpcObject, type ServiceClientConstructor, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

/** `libs/loggregator/proto`, from `src/` under jest and from `dist/` when built. */
const PROTO_DIR = fileURLToPath(new URL('../proto', import.meta.url));

// keepCase: the wire objects use the proto's field names; longs as strings keep int64 nanoseconds exact.
const PROTO_OPTIONS = {
  includeDirs: [PROTO_DIR],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
};

let ingress: ServiceClientConstructor | undefined;

/** The generated client class of `loggregator.v2.Ingress`, loaded once (its `service` serves test servers too). */
export function ingressClientClass(): ServiceClientConstructor {
  if (ingress) return ingress;
  const definition = loadSync('loggregator-api/v2/ingress.proto', PROTO_OPTIONS);
  const pkg = loadPackageDefinition(definition) as unknown as { loggregator: { v2: GrpcObject } };
  ingress = pkg.loggregator.v2['Ingress'] as ServiceClientConstructor;
  return ingress;
}
