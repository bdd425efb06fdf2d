package admin_test

// pw is the password of the users the browser tests sign in as.
const pw = "correct horse battery"
