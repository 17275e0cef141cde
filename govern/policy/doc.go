// Package policy loads the policy file, the mission profile: which profile,
// egress destinations and credential grants each agent has, and what each
// profile allows the governed shell to do.
package policy
