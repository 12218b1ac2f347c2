// Package charts holds Tailor's Helm chart, charts/tailor, and renders it with Helm's own Go SDK
// (Render) for its tests and for the e2e tests that use the chart's objects. The tests render it
// for a set of values, check the objects, load the scheduler configuration the way kube-scheduler
// loads it, list every RBAC grant with its reason, check the Grafana dashboard's ConfigMap,
// apply the result to a real API server, and install the previous chart (testdata/previous) with
// Helm's SDK, upgrade it to this one and roll it back on a sandbox with a fleet and Tailor running.
package charts
