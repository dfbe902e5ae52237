/**
 * The body CC sends to `POST /stage/:staging_guid` with the `lifecycle` given (docker or buildpack), the
 * result reported to `<callbackBase>/internal/v3/staging/<guid>/build_completed?start=false`; `env` is
 * the staging's environment.
 */
export function stagingBody(
  callbackBase: string,
  guid: string,
  lifecycle: unknown,
  env: Record<string, string> = {},
) {
  return {
    app_guid: 'app-1',
    app_name: 'app',
    staging_guid: guid,
    org_name: 'org',
    org_guid: 'org-1',
    space_name: 'dev',
    space_guid: 'space-1',
    environment: Object.entries(env).map(([name, value]) => ({ name, value })),
    completion_callback: `${callbackBase}/internal/v3/staging/${guid}/build_completed?start=false`,
    lifecycle,
    memory_mb: 256,
    disk_mb: 1024,
    cpu_weight: 10,
  };
}

/** A buildpack staging's lifecycle with one buildpack, go's; `buildpack` adds fields to it (skip_detect). */
export function buildpackLifecycle(buildpack: Record<string, unknown> = {}) {
  return {
    buildpack_lifecycle: {
      app_bits_download_uri: 'https://cc.example/bits',
      droplet_upload_uri: 'https://cc.example/droplet',
      buildpacks: [
        { name: 'go', key: 'go-buildpack', url: 'https://buildpacks.example/go.zip', ...buildpack },
      ],
    },
  };
}
