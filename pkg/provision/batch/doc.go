// Package batch gathers the provisioner's reasons to plan into batches, so that a burst of
// pending pods is planned once, when it ends, rather than once per pod. It knows nothing of pods
// or plans: it only keeps time between a batch's first trigger and its close.
package batch
