# script-version: 2.0
# The ParaView route to what volseg_insitu's own pipeline does every step:
# threshold the published field into a 0/1 mask (ParaView's Python
# Calculator, numpy inside) and write the mask as a parallel VTK image
# extract (.pvti, one .vti per rank). bench/insitu_bench.py times it beside
# volseg's pipeline. Settings: VOLSEG_FIELD [field], VOLSEG_LO, VOLSEG_HI,
# VOLSEG_CATALYST_OUTPUT [catalyst].
import os

from paraview.simple import *
from paraview import catalyst

field = os.environ.get('VOLSEG_FIELD', 'field')
lo = float(os.environ.get('VOLSEG_LO', '0.1'))
hi = float(os.environ.get('VOLSEG_HI', '1'))

producer = PVTrivialProducer(registrationName='input')
mask = PythonCalculator(registrationName='mask', Input=producer)
values = "inputs[0].PointData['%s']" % field
mask.Expression = "((%s >= %r) & (%s <= %r)).astype('uint8')" % (values, lo, values, hi)
mask.ArrayName = 'mask'
only_mask = PassArrays(registrationName='only_mask', Input=mask)
only_mask.PointDataArrays = ['mask']

vti = CreateExtractor('VTI', only_mask, registrationName='mask_vti')
vti.Trigger = 'TimeStep'
vti.Trigger.Frequency = 1
vti.Writer.FileName = 'mask_{timestep:06d}.pvti'

options = catalyst.Options()
options.GlobalTrigger = 'TimeStep'
options.ExtractsOutputDirectory = os.environ.get('VOLSEG_CATALYST_OUTPUT', 'catalyst')
