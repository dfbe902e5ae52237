/**
 * Serves discovery: `/version`, `/api`, `/apis`, a group's and a version's resource lists, and the OpenAPI
 * v2 document (JSON, or protobuf as kubectl asks for it, encoded once). The documents come from
 * discovery.ts and openapi.ts.
 */
import type http from 'node:http';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, serverVersion } from './discovery.js';
import { type Res, send } from './http-io.js';
import { encodeOpenApiProtobuf, openApiDocument } from './openapi.js';
import type { Store } from './store.js';

export class DiscoveryEndpoints {
  private openApiPb: Buffer | undefined;

  constructor(private readonly store: Store) {}

  /** Answers a discovery GET; false when the path is not one. */
  serve(req: http.IncomingMessage, res: Res, path: string): boolean {
    const reg = this.store.registry;
    let body: object | undefined;
    if (path === '/openapi/v2') {
      if (req.headers.accept?.includes('protobuf')) {
        this.openApiPb ??= encodeOpenApiProtobuf(this.openApi());
        // As a real server: the protobuf goes out as application/octet-stream.
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': this.openApiPb.length,
        });
        res.end(this.openApiPb);
        return true;
      }
      body = this.openApi();
    } else if (path === '/version') body = serverVersion(this.store.minorVersion);
    else if (path === '/api') body = apiVersions(req.headers.host ?? '127.0.0.1');
    else if (path === '/apis') body = apiGroupList(reg);
    else if (path === '/api/v1') body = apiResourceList(reg, '', 'v1');
    else {
      const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
      if (!m) return false;
      const group = m[1] ?? '';
      body = m[2] ? apiResourceList(reg, group, m[2]) : apiGroup(reg, group);
      if (!body) return false;
    }
    send(res, 200, body);
    return true;
  }

  private openApi(): Record<string, unknown> {
    return openApiDocument(serverVersion(this.store.minorVersion).gitVersion, this.store.registry);
  }
}
