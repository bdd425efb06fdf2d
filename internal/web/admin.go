package web

// adminSource is the source_service of the audit events the admin console's
// actions write: spec 2 (Events) names the operators' dashboard "backend".
const adminSource = "backend"
