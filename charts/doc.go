// Package charts holds Tailor's Helm chart, charts/tailor, and its tests: they render it with
// Helm's own Go SDK for a set of values, check the objects, load the scheduler configuration the
// way kube-scheduler loads it, list every RBAC grant with its reason, and apply the result to a
// real API server. The package has no code of its own; the chart is the product.
package charts
