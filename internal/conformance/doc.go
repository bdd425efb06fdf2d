// Package conformance replicates, by hand, test modules of the OpenID
// Foundation's conformance suite (the OpenID Provider certification plans)
// as Go tests against the whole hmid application, on every database engine.
// Each test is named after a plan, each subtest after one of the plan's
// modules, and each writes down the module's pass and warning conditions
// as comments next to the assertions that check them. The package has no
// code outside its tests.
package conformance
