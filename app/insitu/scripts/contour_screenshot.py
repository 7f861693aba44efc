# script-version: 2.0
# A ParaView 5.11 Catalyst script for volseg_insitu: a contour of the
# published field, coloured by the mask, saved as a PNG every step it runs.
#   volseg-sim ... --insitu --lo 0.2 --hi 1 --catalyst-script contour_screenshot.py
# Settings from the environment (defaults in brackets):
#   VOLSEG_FIELD [field]  the field's name (the hook's --var)
#   VOLSEG_CONTOUR [0.25] the contour value
#   VOLSEG_CATALYST_OUTPUT [catalyst]  where the PNGs go
#   VOLSEG_SCREENSHOT_EVERY [1]  every K-th step the hook runs scripts at
import os

from paraview.simple import *
from paraview import catalyst

field = os.environ.get('VOLSEG_FIELD', 'field')
value = float(os.environ.get('VOLSEG_CONTOUR', '0.25'))
every = int(os.environ.get('VOLSEG_SCREENSHOT_EVERY', '1'))

# The channel volseg_insitu publishes: a vtkImageData with the field (and
# the mask, when the hook thresholds) as point arrays, ghost points marked.
producer = PVTrivialProducer(registrationName='input')

contour = Contour(registrationName='contour', Input=producer)
contour.ContourBy = ['POINTS', field]
contour.Isosurfaces = [value]
contour.ComputeScalars = 1

view = CreateView('RenderView')
view.ViewSize = [640, 480]
view.OrientationAxesVisibility = 0
view.UseColorPaletteForBackground = 0  # else 5.11 ignores Background
view.Background = [0.12, 0.12, 0.16]
view.CameraPosition = [2.2, 1.6, 2.6]
view.CameraFocalPoint = [0.5, 0.5, 0.5]
view.CameraViewUp = [0.0, 1.0, 0.0]

outline = Show(Outline(registrationName='outline', Input=producer), view)
outline.DiffuseColor = [0.8, 0.8, 0.8]
surface = Show(contour, view)
ColorBy(surface, ('POINTS', field))
surface.LookupTable = GetColorTransferFunction(field)

png = CreateExtractor('PNG', view, registrationName='contour_png')
png.Trigger = 'TimeStep'
png.Trigger.Frequency = every
png.Writer.FileName = 'contour_{timestep:06d}.png'
png.Writer.ImageResolution = [640, 480]

options = catalyst.Options()
options.GlobalTrigger = 'TimeStep'
options.ExtractsOutputDirectory = os.environ.get('VOLSEG_CATALYST_OUTPUT', 'catalyst')


def catalyst_execute(info):
    # Frame the data each step: the grid's bounds may change between runs.
    ResetCamera(view)
