{{- /*
What Envoy's probes reach, as a Bootstrap fragment (JSON) that Envoy merges
into its bootstrap with --config-yaml, so one definition serves both sinks
(the chart's ADS bootstrap and the one the server writes for
envoy-configmap). The admin interface listens on 127.0.0.1, where the
kubelet cannot reach it; this listener on envoy.probePort passes GET /ready,
and nothing else of the admin interface, to it, and answers /live itself.
*/}}
{{- define "edge-operator.envoyProbeBootstrap" -}}
{{- $admin := "edge-operator-envoy-admin" -}}
{{- $hcm := dict
  "@type" "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
  "stat_prefix" "probes"
  "route_config" (dict
    "name" "probes"
    "virtual_hosts" (list (dict
      "name" "probes"
      "domains" (list "*")
      "routes" (list
        (dict "match" (dict "path" "/ready") "route" (dict "cluster" $admin "timeout" "2s"))
        (dict "match" (dict "path" "/live") "direct_response" (dict "status" 200 "body" (dict "inline_string" "alive\n")))
      ))))
  "http_filters" (list (dict
    "name" "envoy.filters.http.router"
    "typed_config" (dict "@type" "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router")))
-}}
{{- $listener := dict
  "name" "edge-operator-probes"
  "address" (dict "socket_address" (dict "address" "0.0.0.0" "port_value" (int .Values.envoy.probePort)))
  "filter_chains" (list (dict "filters" (list (dict
    "name" "envoy.filters.network.http_connection_manager"
    "typed_config" $hcm))))
-}}
{{- $cluster := dict
  "name" $admin
  "type" "STATIC"
  "connect_timeout" "1s"
  "load_assignment" (dict
    "cluster_name" $admin
    "endpoints" (list (dict "lb_endpoints" (list (dict "endpoint" (dict "address" (dict "socket_address" (dict "address" "127.0.0.1" "port_value" 9901))))))))
-}}
{{- dict "static_resources" (dict "listeners" (list $listener) "clusters" (list $cluster)) | toJson -}}
{{- end }}
