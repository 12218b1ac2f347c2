// Package disruption is Tailor's voluntary disruption loop: it removes empty nodes, replaces
// drifted ones, and consolidates underutilized ones onto fewer or cheaper nodes, within the
// NodePools' budgets, PodDisruptionBudgets and do-not-disrupt annotations. Every "can these pods
// go elsewhere?" is asked of the provisioning planner, which asks the scheduler profile's Filter
// plugins; nothing here decides fit by itself.
package disruption
