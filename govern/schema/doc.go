// Package schema holds the JSON Schemas (draft 2020-12) of
// mitrity-gateway.yaml and of the policy file, which editors use to complete
// and check the files, and validates YAML against them. The loaders
// (govern/config, govern/policy) stay the authority; the tests beside them
// keep the schemas true to the loaders.
package schema
