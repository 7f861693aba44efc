# script-version: 2.0
# A ParaView 5.11 Catalyst script for volseg_insitu: the published grid
# (field, mask, ghost points) written as a parallel VTK image (.pvti, one
# .vti piece per rank) every K steps, for post hoc work in ParaView.
#   volseg-sim ... --insitu --lo 0.2 --hi 1 --catalyst-script extract_pvti.py
# Settings from the environment (defaults in brackets):
#   VOLSEG_EXTRACT_EVERY [2]  every K-th step the hook runs scripts at
#   VOLSEG_CATALYST_OUTPUT [catalyst]  where the extracts go
import os

from paraview.simple import *
from paraview import catalyst

every = int(os.environ.get('VOLSEG_EXTRACT_EVERY', '2'))

producer = PVTrivialProducer(registrationName='input')

vti = CreateExtractor('VTI', producer, registrationName='grid_vti')
vti.Trigger = 'TimeStep'
vti.Trigger.Frequency = every
vti.Writer.FileName = 'grid_{timestep:06d}.pvti'

options = catalyst.Options()
options.GlobalTrigger = 'TimeStep'
options.ExtractsOutputDirectory = os.environ.get('VOLSEG_CATALYST_OUTPUT', 'catalyst')
