// Package api embeds hmid's REST contract, api/openapi.yaml (OpenAPI 3.1),
// served at /v1/openapi.yaml and used by the tests to validate every response.
package api

import _ "embed"

// OpenAPI is the contract document.
//
//go:embed openapi.yaml
var OpenAPI []byte
