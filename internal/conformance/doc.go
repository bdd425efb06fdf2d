// Package conformance replicates the OpenID Foundation conformance suite's
// modules by hand, as Go tests run against the whole hmid application on
// every database engine: the Basic OP and Config OP certification plans
// (TestBasicOP, TestConfigOP) and the logout plans. Each subtest is named
// after the suite's module, writes down the conditions the module checks
// with their level (failure or warning), and asserts them; a warning that
// is inherent to hmid (a scope it does not have) is documented where the
// module expects it, so any other warning fails the test.
//
// The package holds no code outside its tests.
package conformance
