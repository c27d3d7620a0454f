// Marks every process the test suite starts (agents, spawners, tasks inherit the environment),
// so the teardown can prove none is left behind.
const { randomUUID } = require('node:crypto');

module.exports = async function globalSetup() {
  process.env.PILOTFISH_TEST_MARK = randomUUID();
};
