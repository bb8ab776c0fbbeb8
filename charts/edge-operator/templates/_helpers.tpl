{{/* Names, labels and the settings several templates share. */}}

{{- define "edge-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{- define "edge-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "edge-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "edge-operator.labels" -}}
helm.sh/chart: {{ include "edge-operator.chart" . }}
app.kubernetes.io/name: {{ include "edge-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: edge-operator
{{- end }}

{{/* Selector labels for one component: server, watcher, envoy. */}}
{{- define "edge-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "edge-operator.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "edge-operator.componentLabels" -}}
{{ include "edge-operator.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "edge-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "edge-operator.serverServiceAccount" -}}
{{- printf "%s-server" (include "edge-operator.fullname" .) }}
{{- end }}

{{- define "edge-operator.watcherServiceAccount" -}}
{{- printf "%s-watcher" (include "edge-operator.fullname" .) }}
{{- end }}

{{/* The webhook registration's base name: <name>-mutate, <name>-validate and <name>-finalizer (registrationName in src/api/webhook-registration.ts). */}}
{{- define "edge-operator.webhookName" -}}
{{- include "edge-operator.fullname" . }}
{{- end }}

{{- define "edge-operator.crdName" -}}
{{- $spec := .Files.Get "files/crd/spec.yaml" | fromYaml }}
{{- printf "%s.%s" $spec.names.plural $spec.group }}
{{- end }}

{{- define "edge-operator.certSecret" -}}
{{- printf "%s-tls" (include "edge-operator.fullname" .) }}
{{- end }}

{{/* The proxies' ADS client pair the operator keeps (built-in certificates) or cert-manager issues. */}}
{{- define "edge-operator.envoyClientSecret" -}}
{{- printf "%s-envoy-ads-client" (include "edge-operator.fullname" .) }}
{{- end }}

{{/* "true" when the TLS ADS port asks for client certificates: the xds sink with dataPlane.xds.mutualTLS.enabled. */}}
{{- define "edge-operator.xdsMutualTLS" -}}
{{- if and (eq (include "edge-operator.dataPlaneSink" .) "xds") .Values.dataPlane.xds.mutualTLS.enabled }}true{{- end }}
{{- end }}

{{/* "true" when the chart provides the proxies' pair: mutual TLS against the operator's own CA (no clientCASecret). */}}
{{- define "edge-operator.xdsManagedClientPair" -}}
{{- if and (include "edge-operator.xdsMutualTLS" .) (not .Values.dataPlane.xds.mutualTLS.clientCASecret) }}true{{- end }}
{{- end }}

{{- define "edge-operator.xdsConfigMap" -}}
{{- default (printf "%s-xds" (include "edge-operator.fullname" .)) .Values.dataPlane.configMapName }}
{{- end }}

{{/* auto is xds: Envoy (envoy.enabled) and proxyless gRPC clients both read ADS. Never memory. */}}
{{- define "edge-operator.dataPlaneSink" -}}
{{- if eq .Values.dataPlane.sink "auto" }}
{{- "xds" }}
{{- else }}
{{- .Values.dataPlane.sink }}
{{- end }}
{{- end }}

{{/* The Service in front of the server pods' ADS ports; the serving certificate names it too. */}}
{{- define "edge-operator.xdsService" -}}
{{- printf "%s-ads" (include "edge-operator.fullname" .) }}
{{- end }}

{{/* The name Envoy dials and checks the ADS server's certificate against. */}}
{{- define "edge-operator.xdsHost" -}}
{{- printf "%s.%s.svc" (include "edge-operator.xdsService" .) .Release.Namespace }}
{{- end }}

{{/* "true" when the server and watcher run in the cluster (no urlOverride). */}}
{{- define "edge-operator.inCluster" -}}
{{- if .Values.webhook.urlOverride }}{{- else }}true{{- end }}
{{- end }}

{{/* The cert-manager Certificate's namespaced name, for cert-manager.io/inject-ca-from. */}}
{{- define "edge-operator.certManagerCertificate" -}}
{{- printf "%s/%s-serving" .Release.Namespace (include "edge-operator.fullname" .) }}
{{- end }}

{{/* The annotations that ask cert-manager's CA injector for the bundle (certManager mode, in cluster). */}}
{{- define "edge-operator.caInjectionAnnotations" -}}
{{- if and (include "edge-operator.inCluster" .) (eq .Values.certs.mode "certManager") }}
cert-manager.io/inject-ca-from: {{ include "edge-operator.certManagerCertificate" . }}
{{- end }}
{{- end }}

{{/*
Where the apiserver calls the server, for a path: a clientConfig. Out of
cluster: the URL and caBundle from values. In cluster: the Service; the
caBundle is injected later (by the server, or by cert-manager), so helm never
renders it and a `helm upgrade` does not wipe it.
*/}}
{{- define "edge-operator.clientConfig" -}}
{{- $v := .root.Values.webhook }}
{{- if $v.urlOverride }}
url: {{ printf "%s%s" (trimSuffix "/" $v.urlOverride) .path | quote }}
caBundle: {{ $v.caBundle | quote }}
{{- else }}
service:
  name: {{ include "edge-operator.fullname" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: {{ $v.servicePort }}
{{- end }}
{{- end }}

{{/* A list of strings in flow style, each quoted: ["v1", "v2"]. */}}
{{- define "edge-operator.flowList" -}}
[{{ range $i, $v := . }}{{ if $i }}, {{ end }}{{ $v | quote }}{{ end }}]
{{- end }}

{{/* Admission rules from files/webhooks.yaml, lists in flow style. */}}
{{- define "edge-operator.rules" -}}
{{- range . }}
- apiGroups: {{ include "edge-operator.flowList" .apiGroups }}
  apiVersions: {{ include "edge-operator.flowList" .apiVersions }}
  operations: {{ include "edge-operator.flowList" .operations }}
  resources: {{ include "edge-operator.flowList" .resources }}
  scope: {{ .scope }}
{{- end }}
{{- end }}

{{/* Checks across values that a JSON Schema says poorly; each failure is one clear line. */}}
{{- define "edge-operator.validate" -}}
{{- $v := .Values }}
{{- if and $v.webhook.urlOverride (not $v.webhook.caBundle) }}
{{- fail "webhook.caBundle is required with webhook.urlOverride: give the base64 PEM of the CA that signed the server's certificate" }}
{{- end }}
{{- if and $v.webhook.caBundle (not $v.webhook.urlOverride) }}
{{- fail "webhook.caBundle is only used with webhook.urlOverride; in the cluster the CA is injected (certs.mode)" }}
{{- end }}
{{- if and (eq $v.crd.storageVersion "v1") (not $v.crd.v1.served) }}
{{- fail "crd.v1.served=false needs crd.storageVersion=v2: the storage version must be served (migrate first, see docs/install.md)" }}
{{- end }}
{{- if and $v.envoy.enabled (eq $v.dataPlane.sink "memory") }}
{{- fail "envoy.enabled=true needs dataPlane.sink=xds (or auto) or envoy-configmap: the memory sink serves nothing (tests and the demo only)" }}
{{- end }}
{{- $xds := eq (include "edge-operator.dataPlaneSink" .) "xds" }}
{{- if and $v.envoy.enabled (include "edge-operator.xdsMutualTLS" .) $v.dataPlane.xds.mutualTLS.clientCASecret (not $v.envoy.xdsClientCertSecret) }}
{{- fail "envoy.xdsClientCertSecret is required with dataPlane.xds.mutualTLS.clientCASecret: the chart's Envoy needs a kubernetes.io/tls Secret whose tls.crt that CA signed (without clientCASecret the chart issues one from the operator's CA)" }}
{{- end }}
{{- if and $v.dataPlane.xds.plaintext.enabled (eq (int $v.dataPlane.xds.plaintext.port) (int $v.dataPlane.xds.port)) }}
{{- fail "dataPlane.xds.plaintext.port must differ from dataPlane.xds.port" }}
{{- end }}
{{- end }}

{{/*
Non-empty when the finalizer is added by a MutatingAdmissionPolicy
(webhook.finalizerPolicy). auto, the default: in the cluster, where it serves
the v1 API, and where the post-install Job (admission-wait-hook.yaml) holds
the install until creates pass the policy; out of cluster no pod can, so auto
leaves it out there. enabled: everywhere, and a cluster without the API is an
error, not a silent fallback (`helm template` knows the cluster only from
--kube-version or --api-versions).
*/}}
{{- define "edge-operator.finalizerPolicy" -}}
{{- $mode := .Values.webhook.finalizerPolicy | default "auto" -}}
{{- $served := or (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy") (semverCompare ">=1.36.0-0" .Capabilities.KubeVersion.Version) -}}
{{- if and (eq $mode "enabled") (not $served) -}}
{{- fail "webhook.finalizerPolicy=enabled needs admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36 or later); auto leaves it out there" -}}
{{- end -}}
{{- if or (eq $mode "enabled") (and (eq $mode "auto") $served (include "edge-operator.inCluster" .)) -}}
true
{{- end -}}
{{- end }}

{{/* The namespaces the webhooks and the finalizer policy leave out, as a JSON list (fromJsonArray). */}}
{{- define "edge-operator.excludedNamespaces" -}}
{{- concat (list "kube-system" .Release.Namespace) .Values.webhook.excludeNamespaces | uniq | toJson -}}
{{- end }}
