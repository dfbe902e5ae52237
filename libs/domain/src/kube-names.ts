/**
 * The formats Kubernetes requires of names, label values and env names: what the contract checks CC's values
 * against, the translation relies on, and the settings check their names with.
 */

/** A Kubernetes label value (≤ 63, alphanumeric at both ends): guids and versions become labels. */
export const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
/** A DNS-1123 label: namespaces. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A DNS-1123 subdomain: PVC claim names. */
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** What Kubernetes before 1.32 accepts as an environment variable name (tasks and staging are held to it). */
export const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
/**
 * What an app's environment variable may be named: anything CC allows (any name but an empty one). The
 * target cluster decides the rest, and a name it refuses makes the desire refused visibly (decision 7).
 */
export const APP_ENV_NAME = /^[\s\S]+$/;
/** A qualified name (optional DNS prefix of at most 253 + '/' + name of at most 63): annotation keys. */
export const QUALIFIED_NAME =
  /^((?=[^/]{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
