{{- /*
The xds sink's ACK-record Leases, made by the chart so that RBAC can name
each one the server may write: <fullname>-xds-0 .. -<n-1>. Each server pod
claims one that no live pod holds (src/dataplane/xds/ack-records-lease.ts).
n: server.ackLeaseSlots, or by default twice server.replicas plus one: a
rollout (maxSurge 1) runs replicas + 1 pods while others still stop, each
holding its Lease until its last record is released.
*/}}
{{- define "edge-operator.ackLeaseSlots" -}}
{{- $n := int .Values.server.ackLeaseSlots }}
{{- if eq $n 0 }}{{ $n = add1 (mul 2 (int .Values.server.replicas)) }}{{ end }}
{{- $n }}
{{- end }}

{{- define "edge-operator.ackLeaseNames" -}}
{{- $prefix := printf "%s-xds" (include "edge-operator.fullname" .) }}
{{- range $i := until (int (include "edge-operator.ackLeaseSlots" .)) }}
- {{ printf "%s-%d" $prefix $i | quote }}
{{- end }}
{{- end }}
